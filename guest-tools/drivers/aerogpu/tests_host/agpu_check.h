/* CHECK() for the host unit-test programs (C and C++): counts checks, reports a failed
 * one with its location and goes on, so one run shows every failure. main() ends with
 * `return agpu_check_report();`, whose "N checks, M failures" line the cargo tests
 * (guest-tools/tests) look for. Include it from exactly one file of a program. */
#ifndef AGPU_CHECK_H
#define AGPU_CHECK_H

#include <stdio.h>

static int g_checks, g_failures;

#define CHECK(c)                                                                  \
    do {                                                                          \
        g_checks++;                                                               \
        if (!(c)) {                                                               \
            g_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
        }                                                                         \
    } while (0)

/* Prints the summary line; returns main's exit status. */
static inline int agpu_check_report(void)
{
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}

#endif
