// c_checksum: an example toolhost plugin written in C (clang + wasi-libc, bindings from
// `wit-bindgen c`). Built by `cargo xtask plugins` into target/plugins/c_checksum.wasm.
//
// Tools:
// - c_checksum: CRC-32, Adler-32 and FNV-1a 64 of a file in the granted directory, plus its
//   size and line count. The host preopens only what c_checksum.toml grants.
// - c_add: adds two numbers (no capability; used for latency benchmarks).
//
// Memory: the component ABI hands the arguments over to us (we free them) and frees what
// we return after the call, so every returned string is malloc'd (tool_string_dup).

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "minijson.h"

static void set_tool(tool_tool_info_t *t, const char *name, const char *description,
                     const char *parameters, int permission, const char *tag) {
  tool_string_dup(&t->name, name);
  tool_string_dup(&t->description, description);
  tool_string_dup(&t->parameters, parameters);
  if (permission >= 0) {
    t->permissions.len = 1;
    t->permissions.ptr = calloc(1, sizeof(toolhost_tool_types_permission_t));
    t->permissions.ptr[0].tag = (uint8_t)permission;
  } else {
    t->permissions.len = 0;
    t->permissions.ptr = NULL;
  }
  t->tags.len = 3;
  t->tags.ptr = calloc(3, sizeof(tool_string_t));
  tool_string_dup(&t->tags.ptr[0], "example");
  tool_string_dup(&t->tags.ptr[1], "c");
  tool_string_dup(&t->tags.ptr[2], tag);
}

void exports_tool_describe(tool_list_tool_info_t *ret) {
  ret->len = 2;
  ret->ptr = calloc(2, sizeof(tool_tool_info_t));
  set_tool(&ret->ptr[0], "c_checksum",
           "Computes CRC-32, Adler-32 and FNV-1a 64 checksums, size and line count of a file "
           "in the plugin's granted directory.",
           "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
           "\"description\":\"path of the file, e.g. /data/sample.txt\"}},"
           "\"required\":[\"path\"],\"additionalProperties\":false}",
           TOOLHOST_TOOL_TYPES_PERMISSION_READ, "checksum");
  set_tool(&ret->ptr[1], "c_add", "Adds two numbers x and y and returns the sum.",
           "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},"
           "\"y\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"],"
           "\"additionalProperties\":false}",
           -1, "math");
}

static bool fail(tool_tool_error_t *err, uint8_t tag, const char *msg) {
  err->tag = tag;
  // All three cases hold a string at the same place.
  tool_string_dup(&err->val.invalid_arguments, msg);
  return false;
}

static void ok(tool_tool_output_t *ret, const char *canonical, const char *render) {
  tool_string_dup(&ret->canonical, canonical);
  ret->render.is_some = render != NULL;
  if (render) tool_string_dup(&ret->render.val, render);
}

static uint32_t crc32_table[256];

static void crc32_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc32_table[i] = c;
  }
}

static bool checksum(const char *args, tool_tool_output_t *ret, tool_tool_error_t *err) {
  char path[1024];
  if (!mj_get_string(args, "path", path, sizeof path))
    return fail(err, TOOLHOST_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS,
                "`path` must be a string (at most 1023 bytes)");
  toolhost_tool_host_log(TOOLHOST_TOOL_TYPES_LOG_LEVEL_INFO, &(tool_string_t){
      (uint8_t *)path, strlen(path)});
  FILE *f = fopen(path, "rb");
  if (!f) {
    // Outside the preopened directories WASI cannot even name the file.
    char msg[1200];
    snprintf(msg, sizeof msg, "cannot open %s: %s", path, strerror(errno));
    return fail(err, TOOLHOST_TOOL_TYPES_TOOL_ERROR_DENIED, msg);
  }
  crc32_init();
  uint32_t crc = 0xFFFFFFFFu, a = 1, b = 0;
  uint64_t fnv = 0xcbf29ce484222325ull, size = 0, lines = 0;
  unsigned char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < n; i++) {
      unsigned char c = buf[i];
      crc = crc32_table[(crc ^ c) & 0xFF] ^ (crc >> 8);
      a = (a + c) % 65521u;
      b = (b + a) % 65521u;
      fnv = (fnv ^ c) * 0x100000001b3ull;
      if (c == '\n') lines++;
    }
    size += n;
  }
  bool read_error = ferror(f);
  fclose(f);
  if (read_error)
    return fail(err, TOOLHOST_TOOL_TYPES_TOOL_ERROR_EXECUTION_FAILED, "read error");
  crc ^= 0xFFFFFFFFu;
  char escaped[2100];
  mj_escape(path, escaped, sizeof escaped);
  char canonical[2400], render[256];
  snprintf(canonical, sizeof canonical,
           "{\"path\":%s,\"bytes\":%llu,\"lines\":%llu,\"crc32\":\"%08x\","
           "\"adler32\":\"%08x\",\"fnv1a64\":\"%016llx\"}",
           escaped, (unsigned long long)size, (unsigned long long)lines, crc, (b << 16) | a,
           (unsigned long long)fnv);
  snprintf(render, sizeof render, "crc32 %08x  adler32 %08x  fnv1a64 %016llx  %llu bytes",
           crc, (b << 16) | a, (unsigned long long)fnv, (unsigned long long)size);
  ok(ret, canonical, render);
  return true;
}

static bool add(const char *args, tool_tool_output_t *ret, tool_tool_error_t *err) {
  double a, b;
  if (!mj_get_number(args, "x", &a) || !mj_get_number(args, "y", &b))
    return fail(err, TOOLHOST_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS,
                "`x` and `y` must be numbers");
  char canonical[64], render[48];
  snprintf(canonical, sizeof canonical, "{\"sum\":%.17g}", a + b);
  snprintf(render, sizeof render, "%.17g", a + b);
  ok(ret, canonical, render);
  return true;
}

bool exports_tool_call(tool_string_t *name, tool_string_t *arguments, tool_call_context_t *ctx,
                       tool_tool_output_t *ret, tool_tool_error_t *err) {
  // NUL-terminated copies of what we were handed; then free the originals (we own them).
  char *tool = strndup((const char *)name->ptr, name->len);
  char *args = strndup((const char *)arguments->ptr, arguments->len);
  tool_string_free(name);
  tool_string_free(arguments);
  tool_call_context_free(ctx);

  bool result;
  if (strcmp(tool, "c_checksum") == 0) {
    result = checksum(args, ret, err);
  } else if (strcmp(tool, "c_add") == 0) {
    result = add(args, ret, err);
  } else {
    result = fail(err, TOOLHOST_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS, "unknown tool");
  }
  free(tool);
  free(args);
  return result;
}
