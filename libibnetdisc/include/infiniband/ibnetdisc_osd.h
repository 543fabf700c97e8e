/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Kept for programs that still include it; it declares nothing. */
#warning "This header is obsolete."
