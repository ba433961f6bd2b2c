// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_allreduce: MPI_Allreduce over several sizes, every element checked.
 *
 *   mpirun ... mrc_allreduce [-s BYTES,...] [-i ITERS] [-c]
 *
 * For each size (default 8, 4K, 64K, 1M, 4M and 16M bytes) and iteration,
 * every rank fills its buffers from (rank, index, iteration) and runs three
 * reductions: MPI_SUM of int64_t, MPI_SUM of doubles holding integers
 * below 2^40 (exact in a double, so any order of summation gives the same
 * bits), and MPI_MAX of int32_t done in place (MPI_IN_PLACE).  Each rank
 * recomputes the expected value of every element from the formula and
 * compares.  -c (a self-test) makes rank 1 damage one element of its input
 * in every reduction, so that every check must fail.
 *
 * Output (rank 0 prints the totals of all ranks):
 *   MRC_ALLREDUCE size=B iter=I type=T ok|bad=N first=IDX   per check
 *   MRC_ALLREDUCE_RESULT ranks=N checks=C bad=B bytes=X seconds=S
 * Exit status 0 only if every element on every rank matched.
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES 32

static int64_t val_i64(int rank, size_t i, int it)
{
	return (int64_t)((i * 2654435761u + (uint64_t)rank * 40503u + it) &
			 0xffffffffffULL) - ((int64_t)1 << 39);
}

static double val_dbl(int rank, size_t i, int it)
{
	return (double)((i * 40503u + (uint64_t)rank * 2654435761u +
			 (uint64_t)it * 97) & 0xffffffffffULL);
}

static int32_t val_i32(int rank, size_t i, int it)
{
	return (int32_t)((i * 31 + (size_t)rank * 1000003u + (size_t)it * 7) %
			 2147483647u) - 1073741824;
}

static int parse_sizes(const char *arg, size_t *sizes, int *n)
{
	const char *p = arg;
	char *end;

	*n = 0;
	while (*p) {
		unsigned long long v;

		errno = 0;
		v = strtoull(p, &end, 0);
		if (errno || end == p)
			return -1;
		if (*end == 'K' || *end == 'k') {
			v <<= 10;
			end++;
		} else if (*end == 'M' || *end == 'm') {
			v <<= 20;
			end++;
		}
		if (v < 8 || v > (1ULL << 30) || *n == MAX_SIZES)
			return -1;
		sizes[(*n)++] = (size_t)v;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		p = end;
	}
	return *n ? 0 : -1;
}

/* report CHECKED elements of a check with BAD mismatches, the first at FIRST */
static void report(int rank, size_t bytes, int it, const char *type,
		   size_t bad, size_t first)
{
	if (bad)
		printf("MRC_ALLREDUCE rank=%d size=%zu iter=%d type=%s bad=%zu first=%zu\n",
		       rank, bytes, it, type, bad, first);
	else if (rank == 0)
		printf("MRC_ALLREDUCE size=%zu iter=%d type=%s ok\n", bytes, it,
		       type);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES] = { 8, 4 << 10, 64 << 10, 1 << 20, 4 << 20,
				    16 << 20 };
	int nsizes = 6, iters = 2, corrupt = 0, rank, nranks, s, it, opt;
	unsigned long long checks = 0, bad_checks = 0, bytes = 0, tot[3];
	double t0, secs;
	size_t maxb = 0;
	int64_t *a64, *r64;
	double *ad, *rd;
	int32_t *a32;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	while ((opt = getopt(argc, argv, "s:i:c")) != -1) {
		switch (opt) {
		case 's':
			if (parse_sizes(optarg, sizes, &nsizes)) {
				if (rank == 0)
					fprintf(stderr, "bad size list '%s' (8 B .. 1 GiB each)\n",
						optarg);
				MPI_Finalize();
				return 2;
			}
			break;
		case 'i':
			iters = atoi(optarg);
			if (iters < 1 || iters > 1000) {
				MPI_Finalize();
				return 2;
			}
			break;
		case 'c':
			corrupt = 1;
			break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: %s [-s BYTES,...] [-i ITERS] [-c]\n",
					argv[0]);
			MPI_Finalize();
			return 2;
		}
	}
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > maxb)
			maxb = sizes[s];
	a64 = malloc(maxb);
	r64 = malloc(maxb);
	ad = malloc(maxb);
	rd = malloc(maxb);
	a32 = malloc(maxb);
	if (!a64 || !r64 || !ad || !rd || !a32) {
		fprintf(stderr, "rank %d: out of memory for %zu bytes\n", rank, maxb);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	if (rank == 0) {
		printf("MRC_ALLREDUCE ranks=%d sizes=%d iters=%d%s\n", nranks,
		       nsizes, iters, corrupt ? " corrupt" : "");
		fflush(stdout);
	}

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (s = 0; s < nsizes; s++) {
		size_t n64 = sizes[s] / 8, n32 = sizes[s] / 4, i, bad, first;

		for (it = 0; it < iters; it++) {
			/* int64_t, MPI_SUM */
			for (i = 0; i < n64; i++)
				a64[i] = val_i64(rank, i, it);
			if (corrupt && rank == 1)
				a64[n64 / 2] ^= 1;
			memset(r64, 0x5a, n64 * 8);
			MPI_Allreduce(a64, r64, (int)n64, MPI_INT64_T, MPI_SUM,
				      MPI_COMM_WORLD);
			bad = 0;
			first = 0;
			for (i = 0; i < n64; i++) {
				int64_t want = 0;
				int r;

				for (r = 0; r < nranks; r++)
					want += val_i64(r, i, it);
				if (r64[i] != want && !bad++)
					first = i;
			}
			report(rank, sizes[s], it, "int64_sum", bad, first);
			checks++;
			bad_checks += !!bad;

			/* double, MPI_SUM (integers: exact in any order) */
			for (i = 0; i < n64; i++)
				ad[i] = val_dbl(rank, i, it);
			if (corrupt && rank == 1)
				ad[n64 - 1] += 1.0;
			memset(rd, 0xa5, n64 * 8);
			MPI_Allreduce(ad, rd, (int)n64, MPI_DOUBLE, MPI_SUM,
				      MPI_COMM_WORLD);
			bad = 0;
			first = 0;
			for (i = 0; i < n64; i++) {
				double want = 0;
				int r;

				for (r = 0; r < nranks; r++)
					want += val_dbl(r, i, it);
				if (rd[i] != want && !bad++)
					first = i;
			}
			report(rank, sizes[s], it, "double_sum", bad, first);
			checks++;
			bad_checks += !!bad;

			/* int32_t, MPI_MAX, in place */
			for (i = 0; i < n32; i++)
				a32[i] = val_i32(rank, i, it);
			if (corrupt && rank == 1)
				a32[0] = INT32_MAX;
			MPI_Allreduce(MPI_IN_PLACE, a32, (int)n32, MPI_INT32_T,
				      MPI_MAX, MPI_COMM_WORLD);
			bad = 0;
			first = 0;
			for (i = 0; i < n32; i++) {
				int32_t want = val_i32(0, i, it);
				int r;

				for (r = 1; r < nranks; r++)
					if (val_i32(r, i, it) > want)
						want = val_i32(r, i, it);
				if (a32[i] != want && !bad++)
					first = i;
			}
			report(rank, sizes[s], it, "int32_max_inplace", bad,
			       first);
			checks++;
			bad_checks += !!bad;
			bytes += 2 * n64 * 8 + n32 * 4;
		}
	}
	secs = MPI_Wtime() - t0;

	{
		unsigned long long mine[3] = { checks, bad_checks, bytes };

		MPI_Reduce(mine, tot, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
			   MPI_COMM_WORLD);
	}
	if (rank == 0) {
		printf("MRC_ALLREDUCE_RESULT ranks=%d checks=%llu bad=%llu bytes=%llu seconds=%.3f\n",
		       nranks, tot[0], tot[1], tot[2], secs);
		fflush(stdout);
	}
	free(a64);
	free(r64);
	free(ad);
	free(rd);
	free(a32);
	MPI_Finalize();
	return bad_checks ? 1 : 0;
}
