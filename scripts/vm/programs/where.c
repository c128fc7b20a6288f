// where: OpenMP threads that spin and say where they ran, for the VM tests.
//
//   where SECONDS         each OpenMP thread spins for SECONDS of wall time
//   where -s SECONDS      each thread spins until the process gets SIGUSR1 (after a rebind),
//                         then SECONDS more
//
// Every thread samples sched_getcpu() while it spins (only after SIGUSR1 with -s) and at the end
// prints one JSON line: {"thread":N,"tid":TID,"cpus":[CPUs seen],"affinity":[its CPU set]}.
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024

static volatile sig_atomic_t released;

static void on_usr1(int sig) {
  (void)sig;
  released = 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_list(const char *key, const unsigned char *cpus) {
  printf("\"%s\":[", key);
  int first = 1;
  for (int c = 0; c < MAX_CPUS; c++) {
    if (cpus[c]) {
      printf(first ? "%d" : ",%d", c);
      first = 0;
    }
  }
  printf("]");
}

int main(int argc, char **argv) {
  int wait_signal = argc > 2 && strcmp(argv[1], "-s") == 0;
  if (argc < 2 || (argc > 2 && !wait_signal)) {
    fprintf(stderr, "usage: where [-s] SECONDS\n");
    return 2;
  }
  double seconds = atof(argv[argc - 1]);
  if (wait_signal) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
  }
  double start = now();
#pragma omp parallel
  {
    unsigned char seen[MAX_CPUS] = {0}, affinity[MAX_CPUS] = {0};
    volatile unsigned long spin = 0;
    while (wait_signal && !released) {
      spin++;
    }
    double from = wait_signal ? now() : start;
    while (now() - from < seconds) {
      for (int i = 0; i < 100000; i++) {
        spin++;
      }
      int cpu = sched_getcpu();
      if (cpu >= 0 && cpu < MAX_CPUS) {
        seen[cpu] = 1;
      }
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int c = 0; c < MAX_CPUS && c < CPU_SETSIZE; c++) {
        affinity[c] = CPU_ISSET(c, &set) != 0;
      }
    }
#pragma omp critical
    {
      printf("{\"thread\":%d,\"tid\":%ld,", omp_get_thread_num(), (long)syscall(SYS_gettid));
      print_list("cpus", seen);
      printf(",");
      print_list("affinity", affinity);
      printf("}\n");
      fflush(stdout);
    }
  }
  return 0;
}
