/* workload.images: pictures made from the seed, encoded as PNG (our chunk writer over zlib's
 * deflate) or JPEG (libjpeg), as the base64 data URLs an image_url content part carries. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

#include <jpeglib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/*
 * The picture of (seed, body, index): a horizontal gradient in red, a vertical one in green
 * and a checkerboard in blue, each offset by draws of its own, with a cell size drawn too.
 * Every request's images differ in their bytes (no cache keyed on them hits across
 * requests), while rows stay smooth: PNG's Sub filter turns a gradient row into a run of
 * equal deltas and deflate shrinks it about a hundredfold, so a 1024×1024 image is tens of
 * kilobytes where noise would be 3 MB.  rgb gets width*height*3 bytes.
 */
static void paint(uint8_t *rgb, uint32_t width, uint32_t height, uint64_t seed, uint64_t body,
		  uint32_t index)
{
	uint64_t st = cl_seed_derive(cl_seed_derive(seed ^ 0x696d616765ull, body), index);
	uint32_t r0 = (uint32_t)cl_splitmix64(&st) & 255, g0 = (uint32_t)cl_splitmix64(&st) & 255,
		 b0 = (uint32_t)cl_splitmix64(&st) & 255;
	uint32_t cell = 8 + (uint32_t)(cl_splitmix64(&st) % 57);
	for (uint32_t y = 0; y < height; y++) {
		uint8_t *row = rgb + (size_t)y * width * 3;
		uint32_t g = (g0 + (uint64_t)y * 255 / height) & 255;
		for (uint32_t x = 0; x < width; x++) {
			row[3 * x] = (uint8_t)(r0 + (uint64_t)x * 255 / width);
			row[3 * x + 1] = (uint8_t)g;
			row[3 * x + 2] = (uint8_t)(b0 + (((x / cell) + (y / cell)) & 1) * 96);
		}
	}
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}

/* One PNG chunk: length, type, data, CRC-32 of type and data (PNG 1.2, section 5.3). */
static int put_chunk(struct cl_buf *out, const char type[4], const uint8_t *data, size_t len)
{
	uint8_t head[8], crc_be[4];
	if (len > 0x7fffffffu)
		return CL_ETOOBIG;
	put_be32(head, (uint32_t)len);
	memcpy(head + 4, type, 4);
	uLong crc = crc32(0L, (const Bytef *)type, 4);
	/* Not with no data: crc32() of a NULL buffer returns the initial value, 0. */
	if (len)
		crc = crc32(crc, data, (uInt)len);
	put_be32(crc_be, (uint32_t)crc);
	return cl_buf_append(out, head, 8) || cl_buf_append(out, data, len) ||
		       cl_buf_append(out, crc_be, 4)
		   ? CL_ENOMEM
		   : 0;
}

int cli_image_png(const uint8_t *rgb, uint32_t width, uint32_t height, struct cl_buf *out)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	size_t stride = (size_t)width * 3, raw_len = (stride + 1) * height;
	uint8_t *raw = malloc(raw_len);
	uLongf z_len = compressBound((uLong)raw_len);
	uint8_t *z = malloc(z_len);
	int rc = CL_ENOMEM;
	if (!raw || !z)
		goto out;
	/* Each row: filter type 1 (Sub), every byte less the same channel of the pixel on its
	 * left (PNG 1.2, section 6.3). */
	for (uint32_t y = 0; y < height; y++) {
		const uint8_t *src = rgb + y * stride;
		uint8_t *dst = raw + y * (stride + 1);
		dst[0] = 1;
		for (size_t i = 0; i < stride; i++)
			dst[1 + i] = (uint8_t)(src[i] - (i >= 3 ? src[i - 3] : 0));
	}
	if (compress2(z, &z_len, raw, (uLong)raw_len, 6) != Z_OK)
		goto out;
	uint8_t ihdr[13];
	put_be32(ihdr, width);
	put_be32(ihdr + 4, height);
	ihdr[8] = 8;  /* bits per channel */
	ihdr[9] = 2;  /* colour type: RGB */
	ihdr[10] = 0; /* deflate */
	ihdr[11] = 0; /* adaptive filtering */
	ihdr[12] = 0; /* no interlace */
	if (cl_buf_append(out, sig, sizeof(sig)) != 0 || put_chunk(out, "IHDR", ihdr, 13) != 0 ||
	    put_chunk(out, "IDAT", z, z_len) != 0 || put_chunk(out, "IEND", ihdr, 0) != 0)
		goto out;
	rc = 0;
out:
	free(raw);
	free(z);
	return rc;
}

/* libjpeg reports errors through a callback that must not return: back to the caller. */
struct jpeg_fail {
	struct jpeg_error_mgr mgr;
	jmp_buf at;
};

static void jpeg_fail_exit(j_common_ptr cinfo)
{
	longjmp(((struct jpeg_fail *)cinfo->err)->at, 1);
}

int cli_image_jpeg(const uint8_t *rgb, uint32_t width, uint32_t height, struct cl_buf *out)
{
	struct jpeg_compress_struct cinfo;
	struct jpeg_fail fail;
	unsigned char *mem = NULL;
	unsigned long mem_len = 0;
	int rc = CL_ENOMEM;
	cinfo.err = jpeg_std_error(&fail.mgr);
	fail.mgr.error_exit = jpeg_fail_exit;
	if (setjmp(fail.at)) {
		jpeg_destroy_compress(&cinfo);
		free(mem);
		return CL_EINVAL;
	}
	jpeg_create_compress(&cinfo);
	jpeg_mem_dest(&cinfo, &mem, &mem_len);
	cinfo.image_width = width;
	cinfo.image_height = height;
	cinfo.input_components = 3;
	cinfo.in_color_space = JCS_RGB;
	jpeg_set_defaults(&cinfo);
	jpeg_set_quality(&cinfo, 85, TRUE);
	jpeg_start_compress(&cinfo, TRUE);
	while (cinfo.next_scanline < cinfo.image_height) {
		JSAMPROW row = (JSAMPROW)(rgb + (size_t)cinfo.next_scanline * width * 3);
		jpeg_write_scanlines(&cinfo, &row, 1);
	}
	jpeg_finish_compress(&cinfo);
	jpeg_destroy_compress(&cinfo);
	if (cl_buf_append(out, mem, mem_len) == 0)
		rc = 0;
	free(mem);
	return rc;
}

/* Appends the base64 (RFC 4648, padded) of in[0..n) to out. */
static int base64_append(struct cl_buf *out, const uint8_t *in, size_t n)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char q[4];
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		q[0] = abc[v >> 18];
		q[1] = abc[(v >> 12) & 63];
		q[2] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
		q[3] = i + 2 < n ? abc[v & 63] : '=';
		if (cl_buf_append(out, q, 4) != 0)
			return CL_ENOMEM;
	}
	return 0;
}

int cli_image_data_url(const struct cl_scn_images *im, uint64_t seed, uint64_t body, uint32_t index,
		       struct cl_buf *url)
{
	size_t px = (size_t)im->width * im->height * 3;
	uint8_t *rgb = malloc(px);
	struct cl_buf enc;
	cl_buf_init(&enc, 0);
	int rc = CL_ENOMEM;
	if (!rgb)
		goto out;
	paint(rgb, im->width, im->height, seed, body, index);
	rc = im->format == CL_IMAGE_JPEG ? cli_image_jpeg(rgb, im->width, im->height, &enc)
					 : cli_image_png(rgb, im->width, im->height, &enc);
	if (rc)
		goto out;
	const char *head =
	    im->format == CL_IMAGE_JPEG ? "data:image/jpeg;base64," : "data:image/png;base64,";
	cl_buf_reset(url);
	rc = cl_buf_append(url, head, strlen(head))
		 ? CL_ENOMEM
		 : base64_append(url, (const uint8_t *)enc.data, enc.len);
out:
	free(rgb);
	cl_buf_free(&enc);
	return rc;
}

/* The image part of api's message content for one data URL (chat: image_url with a url
 * object; responses: input_image with the url as a string). */
static json_t *image_part(enum cl_api api, const struct cl_scn_images *im, const char *url,
			  size_t len)
{
	static const char *const details[] = { NULL, "auto", "low", "high" };
	const char *detail = (unsigned)im->detail < 4 ? details[im->detail] : NULL;
	json_t *u = json_stringn(url, len);
	json_t *part = json_object();
	bool bad = !u || !part;
	if (!bad && api == CL_API_RESPONSES) {
		bad = json_object_set_new(part, "type", json_string("input_image")) ||
		      json_object_set_new(part, "image_url", u) ||
		      (detail && json_object_set_new(part, "detail", json_string(detail)));
	} else if (!bad) {
		json_t *o = json_object();
		bad = !o || json_object_set_new(part, "type", json_string("image_url")) ||
		      json_object_set_new(o, "url", u) ||
		      (detail && json_object_set_new(o, "detail", json_string(detail))) ||
		      json_object_set_new(part, "image_url", o);
	} else {
		json_decref(u);
	}
	if (bad) {
		json_decref(part);
		return NULL;
	}
	return part;
}

int cli_workload_add_images(struct render_ctx *c, json_t *messages, uint64_t body,
			    struct cl_err *err)
{
	const struct cl_scn_images *im = c->images;
	json_t *user = NULL;
	/* The request's own user message: the last one (a turn's history goes before it). */
	for (size_t i = json_array_size(messages); i-- > 0 && !user;) {
		json_t *m = json_array_get(messages, i);
		json_t *role = json_is_object(m) ? json_object_get(m, "role") : NULL;
		if (json_is_string(role) && strcmp(json_string_value(role), "user") == 0)
			user = m;
	}
	if (!im || !im->count || !user)
		return 0;
	const char *text_type = c->api == CL_API_RESPONSES ? "input_text" : "text";
	json_t *content = json_object_get(user, "content");
	json_t *parts = NULL;
	if (json_is_string(content)) {
		parts = json_pack("[{s:s,s:O}]", "type", text_type, "text", content);
	} else if (json_is_array(content)) {
		parts = json_incref(content);
	} else {
		return 0;
	}
	struct cl_buf url;
	cl_buf_init(&url, 0);
	int rc = parts ? 0 : CL_ENOMEM;
	size_t bytes = 0;
	for (uint32_t k = 0; !rc && k < im->count; k++) {
		rc = cli_image_data_url(im, c->seed, body, k, &url);
		json_t *part = rc ? NULL : image_part(c->api, im, url.data, url.len);
		if (!rc && (!part || json_array_append_new(parts, part) != 0))
			rc = CL_ENOMEM;
		bytes += url.len;
	}
	cl_buf_free(&url);
	/* A body travels to the agents in one message (CL_WIRE_MAX_MSG, 64 MiB): refuse here,
	 * before the run, what PREPARE could not send. */
	if (!rc && bytes > CL_WORKLOAD_MAX_IMAGE_BYTES) {
		json_decref(parts);
		return cl_err_set(
		    err, CL_ETOOBIG,
		    "workload.images: a request's %u images are %.1f MiB as data URLs, "
		    "more than %u MiB; use fewer or smaller images",
		    im->count, bytes / 1048576.0, CL_WORKLOAD_MAX_IMAGE_BYTES >> 20);
	}
	if (!rc && json_object_set_new(user, "content", parts) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory making workload.images");
	if (rc) {
		json_decref(parts);
		return cl_err_set(err, rc, "out of memory making workload.images");
	}
	return 0;
}
