// minijson.h: just enough JSON for tool arguments. Finds a member of the top-level object
// (skipping nested values properly) and reads it as a string or a number. Header-only.
#ifndef MINIJSON_H
#define MINIJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mj_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

// Reads the string starting at `p` (a '"'); writes it unescaped into out (may be NULL).
// Returns the position after the closing quote, or NULL.
static const char *mj_string(const char *p, char *out, size_t cap, bool *fits) {
  size_t n = 0;
  if (fits) *fits = true;
  if (*p++ != '"') return NULL;
  while (*p && *p != '"') {
    char c = *p++;
    if (c == '\\') {
      char e = *p++;
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          // Only \u00XX is decoded; anything wider becomes '?'.
          char hex[5] = {0};
          for (int i = 0; i < 4; i++) {
            if (!p[i]) return NULL;
            hex[i] = p[i];
          }
          p += 4;
          long v = strtol(hex, NULL, 16);
          c = v < 0x80 ? (char)v : '?';
          break;
        }
        case '\0': return NULL;
        default: c = e; break;
      }
    }
    if (out) {
      if (n + 1 < cap) out[n++] = c;
      else if (fits) *fits = false;
    }
  }
  if (out && cap) out[n] = 0;
  return *p == '"' ? p + 1 : NULL;
}

// Skips any JSON value; returns the position after it, or NULL.
static const char *mj_skip(const char *p) {
  p = mj_ws(p);
  if (*p == '"') return mj_string(p, NULL, 0, NULL);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (*p) {
      if (*p == '"') {
        p = mj_string(p, NULL, 0, NULL);
        if (!p) return NULL;
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      if (*p == '}' || *p == ']') {
        depth--;
        if (depth == 0) return p + 1;
      }
      p++;
    }
    return NULL;
  }
  const char *start = p;
  while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
  return p == start ? NULL : p;
}

// Finds member `key` of the top-level object; returns the start of its value, or NULL.
static const char *mj_find(const char *json, const char *key) {
  const char *p = mj_ws(json);
  if (*p++ != '{') return NULL;
  char name[128];
  for (;;) {
    p = mj_ws(p);
    if (*p != '"') return NULL;
    bool fits;
    p = mj_string(p, name, sizeof name, &fits);
    if (!p) return NULL;
    p = mj_ws(p);
    if (*p++ != ':') return NULL;
    p = mj_ws(p);
    if (fits && strcmp(name, key) == 0) return p;
    p = mj_skip(p);
    if (!p) return NULL;
    p = mj_ws(p);
    if (*p++ != ',') return NULL;
  }
}

static bool mj_get_string(const char *json, const char *key, char *out, size_t cap) {
  const char *v = mj_find(json, key);
  bool fits;
  return v && *v == '"' && mj_string(v, out, cap, &fits) && fits;
}

static bool mj_get_number(const char *json, const char *key, double *out) {
  const char *v = mj_find(json, key);
  if (!v || !(*v == '-' || (*v >= '0' && *v <= '9'))) return false;
  char *end;
  *out = strtod(v, &end);
  return end != v;
}

// Writes `s` as a quoted JSON string into out.
static void mj_escape(const char *s, char *out, size_t cap) {
  size_t n = 0;
  if (cap < 3) return;
  out[n++] = '"';
  for (; *s && n + 8 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  out[n] = 0;
}

#endif
