# SPDX-License-Identifier: Apache-2.0
# Writes OUT: a C file holding every sql/NNNN_*.sql as a byte array, in name
# order, so the chargeonce binary carries its migrations and needs no path
# to the source tree at run time. Called by src/CMakeLists.txt.
file(GLOB _files ${SQL_DIR}/[0-9]*.sql)
list(SORT _files)
set(_c "/* generated from sql/ by cmake/embed_sql.cmake: do not edit */\n")
string(APPEND _c "#include \"store/migrate.h\"\n\n")
set(_table "")
set(_i 0)
# A first line "-- SPDX-License-Identifier: Apache-2.0" is the licence
# tag of the file, not part of the migration: it is left out, so the bytes
# applied and recorded (schema_migrations.sha256) are those released
# before the tag was added, and a database migrated then is not told its
# migrations changed.
string(HEX "-- SPDX-License-Identifier: Apache-2.0\n" _spdx_hex)
string(LENGTH "${_spdx_hex}" _spdx_len)
foreach(f ${_files})
  get_filename_component(_name ${f} NAME)
  file(READ ${f} _hex HEX)
  string(FIND "${_hex}" "${_spdx_hex}" _at)
  set(_line0 1)
  if(_at EQUAL 0)
    string(SUBSTRING "${_hex}" ${_spdx_len} -1 _hex)
    set(_line0 2)
  endif()
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  string(APPEND _c "static const char sql_${_i}[] = {${_bytes}0x00};\n")
  string(APPEND _table "        { \"${_name}\", sql_${_i}, sizeof(sql_${_i}) - 1, ${_line0} },\n")
  math(EXPR _i "${_i} + 1")
endforeach()
string(APPEND _c "\nconst struct migration_src migrations_embedded[] = {\n${_table}        { 0, 0, 0, 0 }\n};\n")
string(APPEND _c "const unsigned migrations_embedded_n = ${_i};\n")
file(WRITE ${OUT}.tmp "${_c}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
