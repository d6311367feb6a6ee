/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pb.h: the protocol buffers wire format, as much as the device plugin API
 * needs: a reader that walks the fields of one message and a growable
 * writer.  The reader trusts nothing: every length is checked against the
 * bytes that are there, varints are at most 10 bytes, field number 0 and the
 * deprecated group wire types are errors.  Functions return 0 or -errno
 * (-EBADMSG for malformed input, -ENOMEM), never touch errno. */
#ifndef UNIRDMA_K8S_PB_H
#define UNIRDMA_K8S_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pb_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,
	PB_I32 = 5,
};

struct pb_reader {
	const uint8_t *p, *end;
};

/* One field as read: num, wire type, and its value (varint and fixed
 * types in v, length-delimited ones as data/len inside the message). */
struct pb_field {
	uint32_t num;
	enum pb_wire wire;
	uint64_t v;
	const uint8_t *data;
	size_t len;
};

static inline void pb_reader_init(struct pb_reader *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p + len;
}

/* The next field: 1 and *f, 0 at the end of the message, -EBADMSG. */
int pb_next(struct pb_reader *r, struct pb_field *f);

/* A proto3 string field: wire type LEN and valid UTF-8 (as protobuf's own
 * parsers require); false otherwise. */
bool pb_is_string(const struct pb_field *f);

/* A bool or int32 field read strictly: the right wire type, a value that
 * fits.  -EBADMSG otherwise. */
int pb_get_bool(const struct pb_field *f, bool *out);
int pb_get_int32(const struct pb_field *f, int32_t *out);

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;               /* an append failed: the buffer is unusable */
};

void pb_buf_free(struct pb_buf *b);
void pb_put_raw(struct pb_buf *b, const void *data, size_t len);
void pb_put_varint(struct pb_buf *b, uint64_t v);
void pb_put_tag(struct pb_buf *b, uint32_t num, enum pb_wire wire);
/* Length-delimited field (bytes, string, or an encoded sub-message). */
void pb_put_bytes(struct pb_buf *b, uint32_t num, const void *data, size_t len);
void pb_put_string(struct pb_buf *b, uint32_t num, const char *s);
/* A sub-message encoded into another buffer. */
void pb_put_msg(struct pb_buf *b, uint32_t num, const struct pb_buf *sub);
/* proto3 leaves out default values: false is not written. */
void pb_put_bool(struct pb_buf *b, uint32_t num, bool v);

#endif
