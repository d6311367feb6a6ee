/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pb.c: protocol buffers wire format (see pb.h).  Written from the
 * encoding's description (varints of 7-bit groups, tag = number << 3 |
 * wire type); input comes from a socket anyone on the host with access to
 * the kubelet directory can write to, so every step is bounds-checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

#define PB_MAX_FIELD ((1u << 29) - 1)

static int read_varint(struct pb_reader *r, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < 10; i++) {
		uint8_t byte;

		if (r->p >= r->end)
			return -EBADMSG;
		byte = *r->p++;
		/* the tenth byte holds bit 63 alone */
		if (i == 9 && byte > 1)
			return -EBADMSG;
		v |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

static int read_fixed(struct pb_reader *r, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	*out = v;
	return 0;
}

int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t tag, len;
	int ret;

	if (r->p >= r->end)
		return 0;
	ret = read_varint(r, &tag);
	if (ret)
		return ret;
	if (tag >> 3 == 0 || tag >> 3 > PB_MAX_FIELD)
		return -EBADMSG;
	f->num = (uint32_t)(tag >> 3);
	f->data = NULL;
	f->len = 0;
	f->v = 0;
	switch (tag & 7) {
	case PB_VARINT:
		f->wire = PB_VARINT;
		return read_varint(r, &f->v) ?: 1;
	case PB_I64:
		f->wire = PB_I64;
		return read_fixed(r, 8, &f->v) ?: 1;
	case PB_I32:
		f->wire = PB_I32;
		return read_fixed(r, 4, &f->v) ?: 1;
	case PB_LEN:
		f->wire = PB_LEN;
		ret = read_varint(r, &len);
		if (ret)
			return ret;
		if (len > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		f->data = r->p;
		f->len = (size_t)len;
		r->p += len;
		return 1;
	default:                /* 3, 4: groups (deprecated); 6, 7: undefined */
		return -EBADMSG;
	}
}

/* Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing
 * above U+10FFFF. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t k;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			k = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

bool pb_is_string(const struct pb_field *f)
{
	return f->wire == PB_LEN && utf8_ok(f->data, f->len);
}

int pb_get_bool(const struct pb_field *f, bool *out)
{
	if (f->wire != PB_VARINT)
		return -EBADMSG;
	*out = f->v != 0;
	return 0;
}

int pb_get_int32(const struct pb_field *f, int32_t *out)
{
	int64_t v = (int64_t)f->v;

	/* negative int32s are sign-extended to 10-byte varints */
	if (f->wire != PB_VARINT || v < INT32_MIN || v > INT32_MAX)
		return -EBADMSG;
	*out = (int32_t)v;
	return 0;
}

void pb_buf_free(struct pb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void pb_put_raw(struct pb_buf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (b->cap - b->len < len) {
		size_t cap = b->cap ? b->cap : 64;
		uint8_t *np;

		while (cap - b->len < len) {
			if (cap > SIZE_MAX / 2) {
				b->oom = true;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

void pb_put_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_put_raw(b, tmp, n);
}

void pb_put_tag(struct pb_buf *b, uint32_t num, enum pb_wire wire)
{
	pb_put_varint(b, (uint64_t)num << 3 | (uint64_t)wire);
}

void pb_put_bytes(struct pb_buf *b, uint32_t num, const void *data, size_t len)
{
	pb_put_tag(b, num, PB_LEN);
	pb_put_varint(b, len);
	pb_put_raw(b, data, len);
}

void pb_put_string(struct pb_buf *b, uint32_t num, const char *s)
{
	pb_put_bytes(b, num, s, strlen(s));
}

void pb_put_msg(struct pb_buf *b, uint32_t num, const struct pb_buf *sub)
{
	if (sub->oom) {
		b->oom = true;
		return;
	}
	pb_put_bytes(b, num, sub->p, sub->len);
}

void pb_put_bool(struct pb_buf *b, uint32_t num, bool v)
{
	if (!v)
		return;
	pb_put_tag(b, num, PB_VARINT);
	pb_put_varint(b, 1);
}
