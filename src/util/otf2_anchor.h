/* The OTF2 anchor file (traces.otf2), checked before libotf2 reads it.
 *
 * libotf2 trusts the counts in an anchor: a damaged one (8 bytes 0xff over
 * the number of properties) makes its reader allocate and loop for
 * billions of properties, its memory growing for minutes.  This module
 * reads the anchor the way libotf2's OTF2_AnchorFile_Load does (the
 * buffer's chunk header and endianness, the "OTF2" magic, the anchor and
 * trace formats, chunk sizes, substrate, compression, counts, the strings
 * and properties, the trace id, the snapshot and thumbnail counts, the end
 * of file), with every read bounded by the file and every count checked
 * against what a trace can hold, so that only an anchor libotf2 reads in
 * bounded time and memory is handed to it.  Plain C, no libotf2: the
 * converter uses it, and so does its fuzz harness. */
#ifndef SM_OTF2_ANCHOR_H
#define SM_OTF2_ANCHOR_H

#include <stddef.h>
#include <stdint.h>
#include "../core/compiler.h"

/* Bytes of the largest anchor file read (a real one has a few hundred). */
#define SM_OTF2_ANCHOR_MAX ((size_t)1 << 20)

/* What the check found out (for messages and tests). */
typedef struct sm_otf2_anchor {
    uint8_t anchor_format, trace_format, version[3];
    uint64_t locations, global_defs;
    uint32_t properties;
} sm_otf2_anchor_t;

/* data[len], the whole anchor file: 0 (and *out, which may be NULL), or -1
 * with why ("the number of properties (4294967295) is more than its 12
 * bytes hold"). */
int sm_otf2_anchor_check(const uint8_t *data, size_t len, sm_otf2_anchor_t *out, char *why,
                         size_t whylen) SM_HIDDEN;

#endif
