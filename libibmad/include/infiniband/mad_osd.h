/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Kept for old includes; everything lives in mad.h. */
#warning "This header is obsolete."
