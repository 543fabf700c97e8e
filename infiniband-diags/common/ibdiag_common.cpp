// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Small helpers several tools share: counter units, capability checks,
// field printing.
#include "ibdiag_common.h"

#include <cstdio>
#include <cstring>
#include <endian.h>

namespace ibdiag {

namespace {
// PortInfo:CapabilityMask bit 15 (CapabilityMask2 is valid) and
// CapabilityMask2 bit 1 (PortInfoExtended supported), host order.
constexpr uint32_t kCapHasCapMask2 = 1u << 15;
constexpr uint16_t kCap2PortInfoExt = 1u << 1;
} // namespace

const char *conv_cnt_human_readable(uint64_t val64, float *val, bool data)
{
	static const char *const plain[] = {"", "K", "M", "G", "T", "P", "E"};
	static const char *const bytes[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
	// Scale by powers of 1024 while the value has at least one more unit.
	unsigned unit = 0;
	uint64_t divisor = 1;
	for (uint64_t rest = val64 / 1024; rest; rest /= 1024) {
		unit++;
		divisor *= 1024;
	}
	*val = (float)val64;
	if (data) {
		*val *= 4; // data counters count 4-byte words
		if (*val / divisor > 1024) {
			unit++;
			divisor *= 1024;
		}
	}
	*val /= divisor;
	const char *const *names = data ? bytes : plain;
	return unit < 7 ? names[unit] : "";
}

bool is_mlnx_ext_port_info_supported(uint32_t vendorid, uint16_t devid)
{
	if (!(cfg.ibnetdisc_flags & kNetdiscMlxEpi))
		return false;
	const bool bull = vendorid == 0x119f;
	// Switches: SwitchX, Switch-IB(2), Quantum and Bull's OEM parts.
	if ((devid >= 0xc738 && devid <= 0xc73b) || devid == 0xc839 ||
	    devid == 0xcb20 || devid == 0xcf08 || devid == 0xcf09 ||
	    devid == 0xd2f0 ||
	    (bull && (devid == 0x1b02 || devid == 0x1b50 || devid == 0x1ba0 ||
		      (devid >= 0x1bd0 && devid <= 0x1bd5) || devid == 0x1bf0)))
		return true;
	// Adapters: ConnectX-3 onwards, Connect-IB, BlueField; Bull's OEM ones.
	if ((devid >= 0x1003 && devid <= 0x101b) || devid == 0xa2d2 ||
	    (bull && (devid == 0x1b33 || devid == 0x1b73 || devid == 0x1b40 ||
		      devid == 0x1b41 || devid == 0x1b60 || devid == 0x1b61 ||
		      devid == 0x1b83 || devid == 0x1b93 || devid == 0x1b94 ||
		      devid == 0x1bb4 || devid == 0x1bb5 ||
		      (devid >= 0x1bc4 && devid <= 0x1bc6))))
		return true;
	return false;
}

bool is_port_info_extended_supported(ib_portid_t *dest, int port,
				     struct ibmad_port *srcport)
{
	uint8_t data[IB_SMP_DATA_SIZE] = {};
	if (!smp_query_via(data, dest, IB_ATTR_NODE_INFO, 0, 0, srcport))
		IBEXIT("node info query failed");
	int type = 0;
	mad_decode_field(data, IB_NODE_TYPE_F, &type);
	int portnum = type == IB_NODE_SWITCH ? 0 : port;
	if (!smp_query_via(data, dest, IB_ATTR_PORT_INFO, portnum, 0, srcport))
		IBEXIT("port info query failed");
	uint32_t cap_mask = 0;
	mad_decode_field(data, IB_PORT_CAPMASK_F, &cap_mask);
	if (!(cap_mask & kCapHasCapMask2)) {
		IBWARN("port info capability mask2 not supported");
		return false;
	}
	uint16_t cap_mask2 = 0;
	mad_decode_field(data, IB_PORT_CAPMASK2_F, &cap_mask2);
	if (!(cap_mask2 & kCap2PortInfoExt)) {
		IBWARN("port info capability mask2 = 0x%x doesn't"
		       " indicate PortInfoExtended support", cap_mask2);
		return false;
	}
	return true;
}

int snprint_field(char *buf, size_t n, enum MAD_FIELDS f, int spacing,
		  const char *fmt, ...)
{
	const char *name = mad_field_name(f);
	size_t len = strlen(name);
	if (len + 2 > n || (size_t)spacing + 1 > n)
		return 0;
	// "Name:" then dots up to column `spacing`, the value after.
	memcpy(buf, name, len);
	buf[len] = ':';
	for (size_t i = len + 1; i < (size_t)spacing + 1; i++)
		buf[i] = '.';
	va_list ap;
	va_start(ap, fmt);
	size_t at = (size_t)spacing + 1 > len + 1 ? (size_t)spacing + 1 : len + 1;
	int ret = vsnprintf(buf + at, n - at, fmt, ap);
	va_end(ap);
	return ret + spacing;
}

void dump_portinfo(const void *pi, int tabs)
{
	char val[64];
	char line[1024];
	auto emit = [&](int field) {
		for (int i = 0; i < tabs; i++)
			putchar('\t');
		if (field == IB_PORT_MKEY_F && !cfg.show_keys) {
			snprint_field(line, sizeof(line), (enum MAD_FIELDS)field,
				      32, "%s", kNotDisplayed);
		} else {
			mad_decode_field((uint8_t *)pi, (enum MAD_FIELDS)field, val);
			if (!mad_dump_field((enum MAD_FIELDS)field, line,
					    sizeof(line), val))
				return false;
		}
		printf("%s\n", line);
		return true;
	};
	for (int f = IB_PORT_FIRST_F; f < IB_PORT_LAST_F; f++)
		if (!emit(f))
			return;
	for (int f = IB_PORT_CAPMASK2_F; f < IB_PORT_LINK_SPEED_EXT_LAST_F; f++)
		if (!emit(f))
			return;
}

} // namespace ibdiag
