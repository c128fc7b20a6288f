// Each MPI rank's OpenMP threads say, from inside, where they are allowed to run
// (tests/mpi.rs builds it with `mpicc -fopenmp`).
#define _GNU_SOURCE
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#pragma omp parallel
    {
        cpu_set_t set;
        CPU_ZERO(&set);
        sched_getaffinity(0, sizeof set, &set);
        char list[1024];
        int n = 0;
        for (int c = 0; c < CPU_SETSIZE && n < 1000; c++)
            if (CPU_ISSET(c, &set)) n += snprintf(list + n, sizeof list - n, "%s%d", n ? "," : "", c);
#pragma omp critical
        printf("rank %d/%d thread %d/%d cpus %s\n", rank, size, omp_get_thread_num(), omp_get_num_threads(), list);
    }
    MPI_Finalize();
    return 0;
}
