// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// Reading and writing MAD fields through the field table, and the
// field-level text entry points (mad_dump_field, mad_dump_val,
// mad_print_field, mad_field_name).
//
// Layout model: a MAD is a run of big-endian 32-bit words.  A field of up
// to 32 bits is addressed by its position counted from the least
// significant bit of its word (see fields_table.cpp), so the byte holding
// "little-endian byte i" of the buffer is byte i ^ 3.  The reference walks
// such a field byte by byte: the partial byte below the first whole byte,
// then the whole bytes, then the partial byte above them; the helpers
// below follow the same walk, so that fields whose offset and length do not
// line up with byte boundaries (and odd base offsets) read and write
// exactly the bytes and bits the reference does.
#include <cstring>
#include <cstdio>

#include "fields_internal.h"

using ibmad::field_table;

namespace {

inline uint8_t& word_byte(void* buf, int le_index) noexcept { return static_cast<uint8_t*>(buf)[le_index ^ 3]; }

inline uint32_t low_mask(int bits) noexcept { return (1u << bits) - 1; }

uint32_t read_bits(void* buf, int base_offs, const ib_field_t& f) noexcept {
    const int off = f.bitoffs, len = f.bitlen;
    const int below = (8 - (off & 7)) & 7;  // bits of the first partial byte
    const int above = (off + len) & 7;  // bits of the last partial byte
    const int whole = len / 8;
    int idx = base_offs + off / 8;

    // Entirely inside one byte.
    if (whole == 0 && (off & 7) + len <= 7)
        return (word_byte(buf, idx) >> (off & 7)) & low_mask(len);

    uint32_t low = 0;
    if (below) {
        low = word_byte(buf, idx) >> (8 - below);
        idx++;
    }
    uint32_t v = 0;
    // With four or more whole bytes the 32-bit result holds only them.
    if (above && whole < 4)
        v = word_byte(buf, base_offs + (off + len) / 8) & low_mask(above);
    for (int i = (whole < 4 ? whole : 4) - 1; i >= 0; i--)
        v = (v << 8) | word_byte(buf, idx + i);
    return (v << below) | low;
}

void write_bits(void* buf, int base_offs, const ib_field_t& f, uint32_t val) noexcept {
    const int off = f.bitoffs, len = f.bitlen;
    const int below = (8 - (off & 7)) & 7;
    const int above = (off + len) & 7;
    const int whole = len / 8;
    int idx = base_offs + off / 8;

    if (whole == 0 && (off & 7) + len <= 7) {
        uint8_t& b = word_byte(buf, idx);
        const uint32_t m = low_mask(len) << (off & 7);
        b = static_cast<uint8_t>((b & ~m) | ((val & low_mask(len)) << (off & 7)));
        return;
    }
    if (below) {
        uint8_t& b = word_byte(buf, idx);
        b = static_cast<uint8_t>((b & low_mask(8 - below)) | ((val & low_mask(below)) << (8 - below)));
        val >>= below;
        idx++;
    }
    // Every whole byte is written, also past the 32 bits of val (as zeros).
    for (int i = 0; i < whole; i++) {
        word_byte(buf, idx + i) = static_cast<uint8_t>(val);
        val >>= 8;
    }
    idx += whole;
    if (above) {
        uint8_t& b = word_byte(buf, idx);
        // The reference merges the remaining value unmasked.
        b = static_cast<uint8_t>((b & ~low_mask(above)) | val);
    }
}

uint64_t read_be64(const void* p) noexcept {
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return be64toh(v);
}

void write_be64(void* p, uint64_t v) noexcept {
    v = htobe64(v);
    memcpy(p, &v, sizeof(v));
}

// Byte offset of an array field: narrow fields are stored word-relative
// (see fields_table.cpp) and are turned back into their IBA offset.
int array_byte_offset(const ib_field_t& f) noexcept {
    int off = f.bitoffs;
    if (f.bitlen < 32)
        off = (off & ~31) | (32 - (off & 31) - f.bitlen);
    return off / 8;
}

// "Name:" padded with dots to 33 columns (longer names are not padded).
int put_label(char* buf, int bufsz, const char* name) noexcept {
    char dots[IB_FIELD_NAME_LEN + 1] = "";
    const size_t l = strlen(name);
    if (l < IB_FIELD_NAME_LEN) {
        memset(dots, '.', IB_FIELD_NAME_LEN - l);
        dots[IB_FIELD_NAME_LEN - l] = 0;
    }
    return snprintf(buf, bufsz, "%s:%s", name, dots);
}

// The value text of a field through its dump function, in buf[0..bufsz).
void dump_value(const ib_field_t& f, char* buf, int bufsz, void* val) {
    if (bufsz <= 0)
        return;
    f.def_dump_fn(buf, bufsz, val, ibmad::field_value_size(f));
    buf[bufsz - 1] = 0;
}

}  // namespace

// The exported entry points (the version script picks the names).
//
// None goes through the C-entry barrier: the accessors only do bit and byte
// work on the caller's buffer with the constant field table (the helpers
// above are noexcept), and the text functions add snprintf, the table's
// formatters (dump.cpp, equally free of allocation) and printf. Nothing here
// allocates or throws; symbols.libibmad_nothrow checks that the library
// imports no operator new and no C++ function that could throw. (The
// definitions cannot say noexcept: mad.h declares them without it, and
// every declaration must agree.)
#pragma GCC visibility push(default)
extern "C" {

uint32_t mad_get_field(void* buf, int base_offs, enum MAD_FIELDS field) {
    if (!ibmad::field_in_table(field) || !buf)
        return 0;
    return read_bits(buf, base_offs, field_table[field]);
}

void mad_set_field(void* buf, int base_offs, enum MAD_FIELDS field, uint32_t val) {
    if (!ibmad::field_in_table(field) || !buf)
        return;
    write_bits(buf, base_offs, field_table[field], val);
}

uint64_t mad_get_field64(void* buf, int base_offs, enum MAD_FIELDS field) {
    if (!ibmad::field_in_table(field) || !buf)
        return 0;
    return read_be64(static_cast<uint8_t*>(buf) + base_offs + field_table[field].bitoffs / 8);
}

void mad_set_field64(void* buf, int base_offs, enum MAD_FIELDS field, uint64_t val) {
    if (!ibmad::field_in_table(field) || !buf)
        return;
    write_be64(static_cast<uint8_t*>(buf) + base_offs + field_table[field].bitoffs / 8, val);
}

void mad_set_array(void* buf, int base_offs, enum MAD_FIELDS field, void* val) {
    if (!ibmad::field_in_table(field) || !buf || !val)
        return;
    const ib_field_t& f = field_table[field];
    memcpy(static_cast<uint8_t*>(buf) + base_offs + array_byte_offset(f), val, f.bitlen / 8);
}

void mad_get_array(void* buf, int base_offs, enum MAD_FIELDS field, void* val) {
    if (!ibmad::field_in_table(field) || !buf || !val)
        return;
    const ib_field_t& f = field_table[field];
    memcpy(val, static_cast<uint8_t*>(buf) + base_offs + array_byte_offset(f), f.bitlen / 8);
}

// Decode into val: up to 32 bits as a host uint32_t, 64 bits as a host
// uint64_t, anything longer as the raw bytes.  IB_NO_FIELD copies the first
// 32-bit word as is.
void mad_decode_field(uint8_t* buf, enum MAD_FIELDS field, void* val) {
    if (!ibmad::field_in_table(field) || !buf || !val)
        return;
    if (field == IB_NO_FIELD) {
        memcpy(val, buf, 4);
        return;
    }
    const ib_field_t& f = field_table[field];
    if (f.bitlen <= 32) {
        const uint32_t v = read_bits(buf, 0, f);
        memcpy(val, &v, sizeof(v));
    } else if (f.bitlen == 64) {
        const uint64_t v = read_be64(buf + f.bitoffs / 8);
        memcpy(val, &v, sizeof(v));
    } else {
        memcpy(val, buf + f.bitoffs / 8, f.bitlen / 8);
    }
}

void mad_encode_field(uint8_t* buf, enum MAD_FIELDS field, void* val) {
    if (!ibmad::field_in_table(field) || !buf || !val)
        return;
    if (field == IB_NO_FIELD) {
        memcpy(buf, val, 4);
        return;
    }
    const ib_field_t& f = field_table[field];
    if (f.bitlen <= 32) {
        uint32_t v;
        memcpy(&v, val, sizeof(v));
        write_bits(buf, 0, f, v);
    } else if (f.bitlen == 64) {
        uint64_t v;
        memcpy(&v, val, sizeof(v));
        write_be64(buf + f.bitoffs / 8, v);
    } else {
        memcpy(buf + f.bitoffs / 8, val, f.bitlen / 8);
    }
}

const char* mad_field_name(enum MAD_FIELDS field) {
    if (!ibmad::field_in_table(field))
        return "";
    return field_table[field].name;
}

char* mad_dump_val(enum MAD_FIELDS field, char* buf, int bufsz, void* val) {
    if (!ibmad::field_dumpable(field) || !buf || bufsz <= 0 || !val)
        return nullptr;
    const ib_field_t& f = field_table[field];
    if (!f.def_dump_fn)
        return nullptr;
    dump_value(f, buf, bufsz, val);
    return buf;
}

// "Name:.....value", the label padded to 33 columns; buf must hold more
// than 32 bytes.
char* mad_dump_field(enum MAD_FIELDS field, char* buf, int bufsz, void* val) {
    if (!ibmad::field_dumpable(field) || !buf || bufsz <= 32 || !val)
        return nullptr;
    const ib_field_t& f = field_table[field];
    if (!f.def_dump_fn)
        return nullptr;
    const int n = put_label(buf, bufsz, f.name);
    if (n >= 0 && n < bufsz)
        dump_value(f, buf + n, bufsz - n, val);
    buf[bufsz - 1] = 0;
    return buf;
}

// The same line, under `name` (or the field's own name), on stdout.
int mad_print_field(enum MAD_FIELDS field, const char* name, void* val) {
    if (!ibmad::field_dumpable(field) || !val)
        return -1;
    const ib_field_t& f = field_table[field];
    if (!f.def_dump_fn)
        return -1;
    char line[512];
    const int n = put_label(line, sizeof(line), name ? name : f.name);
    if (n >= 0 && n < static_cast<int>(sizeof(line)))
        dump_value(f, line + n, sizeof(line) - n, val);
    line[sizeof(line) - 1] = 0;
    return printf("%s\n", line);
}

}  // extern "C"
#pragma GCC visibility pop
