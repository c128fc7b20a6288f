/* coretune's per-process placement check: a pre-forking program, as nginx, gunicorn or
 * php-fpm are. The main process forks N workers (fork(), no exec); each worker reports the CPU
 * set it may run on and the CPUs it was seen on while it spins.
 *
 *   forker N [MS] [K:CPU]   N workers, each spinning MS milliseconds (50); worker K first
 *                           moves itself to CPU (sched_setaffinity), leaving its place
 *
 * One line per worker on stdout, in fork order:
 *   worker <index> pid <pid> affinity <cpu list> seen <cpu list>
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

int main(int argc, char **argv) {
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: forker N [MS] [K:CPU]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    long ms = argc > 2 ? atol(argv[2]) : 50;
    int moved = -1, to = -1;
    if (argc > 3 && sscanf(argv[3], "%d:%d", &moved, &to) != 2) {
        fprintf(stderr, "forker: '%s' is not K:CPU\n", argv[3]);
        return 2;
    }
    int fds[2];
    if (pipe(fds) != 0) return 1;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid > 0) continue;
        close(fds[0]);
        if (i == moved) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(to, &one);
            sched_setaffinity(0, sizeof one, &one);
        }
        unsigned char set[MAX_CPU] = {0}, seen[MAX_CPU] = {0};
        spin(ms, seen);
        cpu_set_t mask;
        sched_getaffinity(0, sizeof mask, &mask);
        for (int c = 0; c < MAX_CPU && c < CPU_SETSIZE; c++) set[c] = CPU_ISSET(c, &mask) != 0;
        char affinity[4096], where[4096], line[8300];
        list(affinity, sizeof affinity, set);
        list(where, sizeof where, seen);
        int len = snprintf(line, sizeof line, "worker %d pid %d affinity %s seen %s\n", i,
                           (int)getpid(), affinity, where);
        /* One write per line: the workers' lines do not interleave. */
        if (write(fds[1], line, (size_t)len) != len) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char buf[65536];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)got, stdout);
    int status, failed = 0;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    return failed;
}
