// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Common helpers of the tools built on libibnetdisc (iblinkinfo,
// ibqueryerrors, ...). Link ibnetdisc as well when using these.
#pragma once

#include <cstddef>
#include <infiniband/ibnetdisc.h>

namespace ibdiag {

// "Could be <width>" / "Could be <speed>" when the link runs below what
// both ends support (empty buffers are left untouched otherwise).
void get_max_msg(char *width_msg, char *speed_msg, int msg_size,
		 ibnd_port_t *port);

} // namespace ibdiag
