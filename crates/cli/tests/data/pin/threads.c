/* coretune's per-thread placement check: the main thread and N-1 pthreads each report the CPU
 * set they may run on (pthread_getaffinity_np) and the CPUs they were seen on (sched_getcpu
 * samples while all of them spin together).
 *
 *   threads N [MS]    N threads in all (main included), each spinning MS milliseconds (50)
 *
 * One line per thread on stdout, in creation order (main first):
 *   thread <index> tid <tid> affinity <cpu list> seen <cpu list>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

struct report {
    int index;
    long tid;
    char affinity[4096];
    char seen[4096];
};

static pthread_barrier_t start;
static long spin_ms = 50;


static void *work(void *arg) {
    struct report *r = arg;
    unsigned char set[MAX_CPU] = {0}, seen[MAX_CPU] = {0};
    cpu_set_t mask;
    r->tid = syscall(SYS_gettid);
    pthread_barrier_wait(&start);
    spin(spin_ms, seen);
    if (pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) != 0) {
        perror("pthread_getaffinity_np");
        exit(1);
    }
    for (int c = 0; c < MAX_CPU && c < CPU_SETSIZE; c++) set[c] = CPU_ISSET(c, &mask) != 0;
    list(r->affinity, sizeof r->affinity, set);
    list(r->seen, sizeof r->seen, seen);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: threads N [MS]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (argc > 2) spin_ms = atol(argv[2]);
    struct report *reports = calloc((size_t)n, sizeof *reports);
    pthread_t *ids = calloc((size_t)n, sizeof *ids);
    if (!reports || !ids) return 1;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) reports[i].index = i;
    for (int i = 1; i < n; i++) {
        int rc = pthread_create(&ids[i], NULL, work, &reports[i]);
        if (rc != 0) {
            fprintf(stderr, "pthread_create: error %d\n", rc);
            return 1;
        }
    }
    work(&reports[0]);
    for (int i = 1; i < n; i++) pthread_join(ids[i], NULL);
    for (int i = 0; i < n; i++)
        printf("thread %d tid %ld affinity %s seen %s\n", reports[i].index, reports[i].tid,
               reports[i].affinity, reports[i].seen);
    return 0;
}
