/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
// Private to libibmad: the field table and the helpers the dump code
// shares with fields.cpp.
#pragma once

#include <infiniband/mad.h>

namespace ibmad {

// Indexed by enum MAD_FIELDS; entry IB_FIELD_LAST_ is an empty one.
extern const ib_field_t field_table[IB_FIELD_LAST_ + 1];

// A field id that names a table entry (0 .. IB_FIELD_LAST_).
inline bool field_in_table(int field) noexcept { return field >= 0 && field <= IB_FIELD_LAST_; }

// A field id the dump/print entry points accept (1 .. IB_FIELD_LAST_ - 1).
inline bool field_dumpable(int field) noexcept { return field > IB_NO_FIELD && field < IB_FIELD_LAST_; }

// Bytes a field's value occupies once decoded (bit length rounded up).
inline int field_value_size(const ib_field_t& f) noexcept { return (f.bitlen + 7) / 8; }

}  // namespace ibmad
