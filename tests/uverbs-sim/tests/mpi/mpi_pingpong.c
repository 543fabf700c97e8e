/* An MPI ping-pong (rank 0 <-> rank 1, 4 KiB, each reply's bytes checked)
 * and an allreduce over every rank: what mpi.sh runs over the emulated
 * ConnectX. Prints one line on rank 0; exits 1 on wrong data. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    int rank, size, iters = 100;
    char buf[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            memset(buf, i, sizeof buf);
            MPI_Send(buf, sizeof buf, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (size_t j = 0; j < sizeof buf; j++)
                if (buf[j] != (char)(i + 1)) {
                    printf("ping-pong %d: byte %zu is %d, want %d\n", i, j, buf[j], (char)(i + 1));
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
        } else if (rank == 1) {
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (size_t j = 0; j < sizeof buf; j++)
                if (buf[j] != (char)i)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            memset(buf, i + 1, sizeof buf);
            MPI_Send(buf, sizeof buf, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    int v = rank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ping-pong %d x 4096 bytes ok, allreduce over %d ranks %d (want %d)\n", iters, size, sum,
               size * (size + 1) / 2);
    MPI_Finalize();
    return sum == size * (size + 1) / 2 ? 0 : 1;
}
