// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "sysfs.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

namespace umad::sysfs {

int read_string(const std::string &dir, const char *name, char *buf, size_t max)
{
	if (!max)
		return -EINVAL;
	std::string path = dir + "/" + name;
	int fd = ::open(path.c_str(), O_RDONLY);
	if (fd < 0)
		return -errno;
	ssize_t n = ::read(fd, buf, max - 1);
	int err = errno;
	::close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

int read_ulong(const std::string &dir, const char *name, unsigned long *out)
{
	char buf[64];
	int r = read_string(dir, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	*out = std::strtoul(buf, nullptr, 0);
	return 0;
}

int read_uint(const std::string &dir, const char *name, unsigned *out)
{
	unsigned long v;
	int r = read_ulong(dir, name, &v);
	if (r < 0)
		return r;
	*out = static_cast<unsigned>(v);
	return 0;
}

// Parses colon-separated 16-bit hex groups into raw bytes (big-endian).
// errno is left as the caller had it (callers report their own failures
// with %m, so a successful parse must not clear it).
static int parse_groups(const char *s, uint8_t *raw, int groups)
{
	const int saved = errno;
	for (int i = 0; i < groups; i++) {
		char *end;
		errno = 0;
		unsigned long v = std::strtoul(s, &end, 16);
		const bool overflow = errno != 0;
		errno = saved;
		if (end == s || v > 0xffff || overflow)
			return -EINVAL;
		raw[2 * i] = static_cast<uint8_t>(v >> 8);
		raw[2 * i + 1] = static_cast<uint8_t>(v);
		if (i + 1 < groups) {
			if (*end != ':')
				return -EINVAL;
			s = end + 1;
		}
	}
	return 0;
}

int read_guid(const std::string &dir, const char *name, uint64_t *be_out)
{
	char buf[64];
	int r = read_string(dir, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	uint8_t raw[8];
	if (parse_groups(buf, raw, 4) < 0)
		return -EINVAL;
	std::memcpy(be_out, raw, sizeof(raw));
	return 0;
}

int read_gid(const std::string &dir, const char *name, uint8_t raw[16])
{
	char buf[80];
	int r = read_string(dir, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	return parse_groups(buf, raw, 8) < 0 ? -EINVAL : 0;
}

} // namespace umad::sysfs
