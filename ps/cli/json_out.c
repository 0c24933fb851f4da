// SPDX-License-Identifier: BSD-2-Clause
/* mercury-ps's JSON output (json-c): one object per line on stdout. */
#include <stdio.h>

#include "json_out.h"

/* One JSON object on one line (json-c: strings escaped, e.g. an error naming a path). */
void print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(o);
}

void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void add_double(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(v));
}

void add_bool(struct json_object *o, const char *key, bool v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}
