/* SPDX-License-Identifier: BSD-2-Clause */
/* mercury-ps's JSON output: one object per line on stdout (json-c escapes strings, e.g. an
 * error naming a path). Only the command links it: libmercury-ps does not use json-c. */
#ifndef MERCURY_PS_JSON_OUT_H
#define MERCURY_PS_JSON_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

/* Prints o on one line, flushes, and frees it. */
void print_json(struct json_object *o);
void add_u64(struct json_object *o, const char *key, uint64_t v);
void add_double(struct json_object *o, const char *key, double v);
void add_bool(struct json_object *o, const char *key, bool v);

#endif
