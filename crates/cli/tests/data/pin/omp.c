/* coretune's per-thread placement check for OpenMP runtimes: every thread of a parallel region
 * reports its CPU set (pthread_getaffinity_np) and the CPUs it was seen on (sched_getcpu), then
 * a second region checks the threads are reused.
 *
 *   omp [MS]    OMP_NUM_THREADS threads, each spinning MS milliseconds (50)
 *
 * One line per thread on stdout, by OpenMP thread number:
 *   thread <omp thread num> tid <tid> affinity <cpu list> seen <cpu list>
 *
 * Built with gcc -fopenmp (libgomp), or compiled with gcc -fopenmp -c and linked against LLVM's
 * libomp, which implements the same GOMP_* entry points.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#define MAX_THREADS 256


static char affinity[MAX_THREADS][4096], seen_list[MAX_THREADS][4096];
static long tids[MAX_THREADS];

int main(int argc, char **argv) {
    long spin_ms = argc > 1 ? atol(argv[1]) : 50;
    int threads = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        unsigned char set[MAX_CPU] = {0}, seen[MAX_CPU] = {0};
        cpu_set_t mask;
#pragma omp single
        threads = omp_get_num_threads();
        spin(spin_ms, seen);
        if (me < MAX_THREADS) {
            tids[me] = syscall(SYS_gettid);
            pthread_getaffinity_np(pthread_self(), sizeof mask, &mask);
            for (int c = 0; c < MAX_CPU && c < CPU_SETSIZE; c++) set[c] = CPU_ISSET(c, &mask) != 0;
            list(affinity[me], sizeof affinity[me], set);
            list(seen_list[me], sizeof seen_list[me], seen);
        }
    }
    /* The same threads serve a second region. */
    long again[MAX_THREADS] = {0};
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        if (me < MAX_THREADS) again[me] = syscall(SYS_gettid);
    }
    for (int i = 0; i < threads && i < MAX_THREADS; i++) {
        if (again[i] != tids[i]) {
            fprintf(stderr, "thread %d: tid %ld in the first region, %ld in the second\n", i,
                    tids[i], again[i]);
            return 1;
        }
        printf("thread %d tid %ld affinity %s seen %s\n", i, tids[i], affinity[i], seen_list[i]);
    }
    return 0;
}
