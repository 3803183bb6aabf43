/* SPDX-License-Identifier: Apache-2.0 */
/*
 * currency: the ISO 4217 alpha-3 codes chargeonce accepts (see
 * docs/intent-validation.md for where the list comes from and what is left
 * out). Pure, read-only, any thread.
 *
 * Never accepts a code that is not in the table, whatever its shape.
 */
#include "intent/currency.h"

#include <stdlib.h>
#include <string.h>

/* Sorted (bsearch). schemas/payment-intent.schema.json holds the same list;
 * the agreement test compares them. */
static const char *const currency_codes[] = {
        "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN",
        "BAM", "BBD", "BDT", "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BOV",
        "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHE", "CHF",
        "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUC", "CUP", "CVE",
        "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD",
        "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD",
        "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD",
        "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD",
        "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA",
        "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV",
        "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB",
        "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB",
        "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SLL",
        "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT",
        "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "USN",
        "UYI", "UYU", "UYW", "UZS", "VED", "VES", "VND", "VUV", "WST", "XAF",
        "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG", "ZWL",
};

#define CURRENCY_COUNT (sizeof(currency_codes) / sizeof(currency_codes[0]))

static int currency_cmp(const void *key, const void *elem)
{
        return strcmp(key, *(const char *const *)elem);
}

bool intent_currency_known(const char *s, size_t len)
{
        char code[4];

        if (len != 3)
                return false;
        for (size_t i = 0; i < 3; i++) {
                if (s[i] < 'A' || s[i] > 'Z')
                        return false;
                code[i] = s[i];
        }
        code[3] = '\0';
        return bsearch(code, currency_codes, CURRENCY_COUNT,
                       sizeof(currency_codes[0]), currency_cmp) != NULL;
}

size_t intent_currency_count(void)
{
        return CURRENCY_COUNT;
}

const char *intent_currency_at(size_t i)
{
        return i < CURRENCY_COUNT ? currency_codes[i] : NULL;
}
