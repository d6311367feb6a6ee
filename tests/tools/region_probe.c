/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* region_probe: attacks on a vRNIC's region file and directory, and the
 * victim's side of them, for tests/integration/region.sh.
 *
 *   region_probe hold MARKER BYTES
 *       Opens the first device, registers BYTES of memory filled with MARKER
 *       (repeated; the library moves registered pages into the region's
 *       memory window), prints READY and waits until stdin ends.
 *   region_probe spy PATH MARKER
 *       What a tenant sees through PATH (a region file it kept, or the one
 *       its old mount shows now): prints
 *         HEADER magic=0|1 name=N tenant=T state=S
 *         FOUND offset=O   (MARKER is somewhere in the file's data) or NOTFOUND scanned=B
 *       and the directory's entries (ENTRY name).  Reads only the file's data
 *       extents (SEEK_DATA), so a 16 GiB sparse window is quick.
 *   region_probe plant DIR
 *       Tries to create DIR/planted; prints PLANTED or PLANT-FAILED errno=E.
 *   region_probe grow PATH LIMIT
 *       Truncates PATH to 1 TiB and writes 1 MiB blocks from offset 32 GiB
 *       until a write fails or LIMIT bytes went in; prints
 *         GROWN size=S
 *         WROTE bytes=B errno=E      (E = 0: LIMIT reached without an error)
 *   region_probe shrink PATH
 *       Truncates PATH to 0 bytes; prints SHRUNK.
 *   region_probe punch PATH OFFSET LEN FILL_OFFSET
 *       Punches a hole of LEN bytes at OFFSET into PATH and at once writes
 *       4 KiB pages from FILL_OFFSET until ENOSPC (at most 64 MiB), so that
 *       the freed pages are taken before the daemon touches the hole again;
 *       prints PUNCHED offset=O len=L refilled=B.
 *   region_probe traffic SECONDS
 *       A connected RC loopback pair on the first device; 64 KiB RDMA WRITEs
 *       whose data is checked, for SECONDS; prints TRAFFIC once data moved
 *       and OPS n at the end.  Exit 0 when every WRITE succeeded.
 */
#include "helpers.c"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unirdma/abi.h"

static int cmd_hold(const char *marker, size_t bytes)
{
	struct t_dev d;
	struct ibv_mr *mr;
	size_t mlen = strlen(marker);
	uint8_t *buf;
	char line[64];

	if (!mlen)
		return 1;
	t_open(&d, 0);
	buf = t_map(bytes);
	for (size_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)marker[i % mlen];
	mr = t_reg(d.pd, buf, bytes, T_ALL_ACCESS);
	/* the pattern must still be what we wrote after the move */
	for (size_t i = 0; i < bytes; i++)
		if (buf[i] != (uint8_t)marker[i % mlen]) {
			printf("CHANGED at %zu\n", i);
			return 1;
		}
	printf("READY lkey=%#x\n", mr->lkey);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	ibv_dereg_mr(mr);
	t_close(&d);
	return 0;
}

static int cmd_spy(const char *path, const char *marker)
{
	struct urd_region_hdr h;
	size_t mlen = strlen(marker);
	static uint8_t buf[(1u << 20) + 256];
	uint64_t scanned = 0;
	char dirbuf[4096];
	struct dirent *e;
	off_t data, hole;
	DIR *dh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("OPEN-FAILED errno=%d\n", errno);
	} else {
		memset(&h, 0, sizeof(h));
		if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
			memset(&h, 0, sizeof(h));
		h.name[sizeof(h.name) - 1] = 0;
		h.tenant[sizeof(h.tenant) - 1] = 0;
		printf("HEADER magic=%d name=%s tenant=%s state=%u\n", h.magic == URD_MAGIC, h.name,
		       h.tenant, h.daemon_state);
		for (data = 0; (data = lseek(fd, data, SEEK_DATA)) >= 0; data = hole) {
			hole = lseek(fd, data, SEEK_HOLE);
			if (hole < 0)
				break;
			for (off_t o = data; o < hole;) {
				size_t n = (size_t)(hole - o) > sizeof(buf) ? sizeof(buf) : (size_t)(hole - o);
				ssize_t r = pread(fd, buf, n, o);

				if (r <= 0)
					break;
				scanned += (uint64_t)r;
				for (ssize_t i = 0; i + (ssize_t)mlen <= r; i++)
					if (!memcmp(buf + i, marker, mlen)) {
						printf("FOUND offset=%lld\n", (long long)(o + i));
						goto found;
					}
				/* overlap so that a marker across two reads is seen */
				o += r > (ssize_t)mlen ? r - (ssize_t)mlen : r;
			}
		}
		printf("NOTFOUND scanned=%llu\n", (unsigned long long)scanned);
found:
		close(fd);
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	dh = opendir(dirname(dirbuf));
	while (dh && (e = readdir(dh)))
		if (e->d_name[0] != '.')
			printf("ENTRY %s\n", e->d_name);
	if (dh)
		closedir(dh);
	fflush(stdout);
	return 0;
}

static int cmd_plant(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/planted", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		printf("PLANT-FAILED errno=%d\n", errno);
		return 0;
	}
	if (write(fd, "mine\n", 5) != 5)
		printf("PLANT-WRITE-FAILED errno=%d\n", errno);
	close(fd);
	printf("PLANTED\n");
	return 0;
}

static int cmd_grow(const char *path, uint64_t limit)
{
	static uint8_t blk[1u << 20];
	uint64_t off = 32ull << 30, wrote = 0;
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC), err = 0;

	if (fd < 0) {
		printf("OPEN-FAILED errno=%d\n", errno);
		return 1;
	}
	if (ftruncate(fd, (off_t)(1ull << 40)))
		printf("TRUNCATE-FAILED errno=%d\n", errno);
	fstat(fd, &st);
	printf("GROWN size=%lld\n", (long long)st.st_size);
	memset(blk, 0xa5, sizeof(blk));
	while (wrote < limit) {
		ssize_t r = pwrite(fd, blk, sizeof(blk), (off_t)(off + wrote));

		if (r < 0) {
			err = errno;
			break;
		}
		wrote += (uint64_t)r;
		if (r < (ssize_t)sizeof(blk)) {         /* a short write: the next one says why */
			continue;
		}
	}
	printf("WROTE bytes=%llu errno=%d\n", (unsigned long long)wrote, err);
	fflush(stdout);
	close(fd);
	return 0;
}

static int cmd_shrink(const char *path)
{
	if (truncate(path, 0)) {
		printf("SHRINK-FAILED errno=%d\n", errno);
		return 1;
	}
	printf("SHRUNK\n");
	fflush(stdout);
	return 0;
}

static int cmd_punch(const char *path, uint64_t off, uint64_t len, uint64_t fill)
{
	static uint8_t page[4096];
	uint64_t refilled = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	memset(page, 0x5a, sizeof(page));
	if (fd < 0 || fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len)) {
		printf("PUNCH-FAILED errno=%d\n", errno);
		return 1;
	}
	while (refilled < (64u << 20) &&
	       pwrite(fd, page, sizeof(page), (off_t)(fill + refilled)) == (ssize_t)sizeof(page))
		refilled += sizeof(page);
	close(fd);
	printf("PUNCHED offset=%llu len=%llu refilled=%llu\n", (unsigned long long)off,
	       (unsigned long long)len, (unsigned long long)refilled);
	fflush(stdout);
	return 0;
}

static int cmd_traffic(int seconds)
{
	enum { LEN = 64 << 10 };
	struct t_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr, *dst_mr;
	uint8_t *src, *dst;
	uint64_t t_end = t_now_ms() + (uint64_t)seconds * 1000, ops = 0;

	t_open(&d, 0);
	cq = t_cq(&d, 64, NULL);
	a = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 1, NULL);
	b = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 1, NULL);
	t_rc_connect(&d, a, &d, b, NULL);
	src = t_map(LEN);
	dst = t_map(LEN);
	src_mr = t_reg(d.pd, src, LEN, T_ALL_ACCESS);
	dst_mr = t_reg(d.pd, dst, LEN, T_ALL_ACCESS);
	while (t_now_ms() < t_end) {
		struct ibv_sge sg = t_sge(src, LEN, src_mr->lkey);
		struct ibv_wc wc;

		t_fill(src, LEN, (uint32_t)ops, 0);
		CHECK_OK(t_post(a, ops, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dst_mr->rkey, 0));
		if (t_poll(cq, &wc, 5000) != 1) {
			printf("NO-COMPLETION after %llu ops\n", (unsigned long long)ops);
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("WC-ERROR status=%d after %llu ops\n", wc.status, (unsigned long long)ops);
			return 1;
		}
		CHECK_DATA(dst, LEN, (uint32_t)ops, 0);
		if (!ops++) {
			printf("TRAFFIC\n");
			fflush(stdout);
		}
	}
	printf("OPS %llu\n", (unsigned long long)ops);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_name = "region_probe";
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "spy"))
		return cmd_spy(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "plant"))
		return cmd_plant(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "grow"))
		return cmd_grow(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "shrink"))
		return cmd_shrink(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "punch"))
		return cmd_punch(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
				 strtoull(argv[5], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "traffic"))
		return cmd_traffic(atoi(argv[2]));
	fprintf(stderr, "usage: region_probe hold MARKER BYTES | spy PATH MARKER | plant DIR |\n"
		"       grow PATH LIMIT | shrink PATH | punch PATH OFFSET LEN FILL_OFFSET | traffic SECONDS\n");
	return 2;
}
