/* What the placement test programs (threads.c, omp.c) share: a CPU set as a kernel-style CPU
 * list, a monotonic clock in milliseconds, and spinning while sampling sched_getcpu(). */
#include <sched.h> /* sched_getcpu: the including file defines _GNU_SOURCE first */
#include <stdio.h>
#include <time.h>

#define MAX_CPU 1024

/* set[c] != 0 for each CPU c in the set; writes "0-2,5". */
static void list(char *out, size_t size, const unsigned char *set) {
    size_t len = 0;
    out[0] = '\0';
    for (int c = 0; c < MAX_CPU; c++) {
        if (!set[c]) continue;
        int last = c;
        while (last + 1 < MAX_CPU && set[last + 1]) last++;
        len += (size_t)snprintf(out + len, size - len, len ? ",%d" : "%d", c);
        if (last > c) len += (size_t)snprintf(out + len, size - len, "-%d", last);
        c = last;
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Spins `ms` milliseconds, setting seen[c] for every CPU c sched_getcpu() reports meanwhile. */
static void spin(long ms, unsigned char *seen) {
    double end = now_ms() + ms;
    volatile unsigned long sink = 0;
    while (now_ms() < end) {
        for (int i = 0; i < 10000; i++) sink += (unsigned long)i;
        int cpu = sched_getcpu();
        if (cpu >= 0 && cpu < MAX_CPU) seen[cpu] = 1;
    }
}
