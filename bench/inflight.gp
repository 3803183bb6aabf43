# gnuplot -e "data='sweep.dat'; out='inflight.png'" bench/inflight.gp
# sweep.dat: consumer.max_in_flight, intents/s, VmHWM kB (bench/measure.sh)
set terminal pngcairo size 800,480 noenhanced
set output out
set title "chargeonce end to end, instant simulator: throughput vs in-flight limit"
set xlabel "consumer.max_in_flight"
set ylabel "intents/s (produced -> result published)"
set logscale x
set grid
set key off
plot data using 1:2 with linespoints lw 2 pt 7
