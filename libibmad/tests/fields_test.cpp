// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The data half of libibmad against Debian's libibmad.so.5: the field table
// (names, offsets, lengths through the accessors), every accessor on random
// and edge-case buffers, and the text of every dump function.
//
// Debian's library has the same soname as ours, so it is loaded with
// dlmopen() into a link namespace of its own; its entry points are reached
// through dlsym() there, ours through the normal link.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <infiniband/mad.h>

namespace {

constexpr const char* debian_lib = "/usr/lib/x86_64-linux-gnu/libibmad.so.5";

// Debian 44 knows the fields below this id; ours appends after them.
constexpr int debian_field_last = 666;

using dump_fn = void(char*, int, void*, int);

struct Reference {
    void* handle = nullptr;
    const char* (*field_name)(int);
    uint32_t (*get_field)(void*, int, int);
    void (*set_field)(void*, int, int, uint32_t);
    uint64_t (*get_field64)(void*, int, int);
    void (*set_field64)(void*, int, int, uint64_t);
    void (*get_array)(void*, int, int, void*);
    void (*set_array)(void*, int, int, void*);
    void (*decode_field)(uint8_t*, int, void*);
    void (*encode_field)(uint8_t*, int, void*);
    char* (*dump_field)(int, char*, int, void*);
    char* (*dump_val)(int, char*, int, void*);
    int (*print_field)(int, const char*, void*);
    void (*dump_fields)(char*, int, void*, int, int, int);
    void (*xdump)(FILE*, const char*, void*, int);
    int (*flush)(FILE*);  // fflush of the C library of Debian's namespace

    template <typename T>
    void bind(T& fn, const char* name) {
        fn = reinterpret_cast<T>(dlsym(handle, name));
        if (!fn)
            ADD_FAILURE() << "Debian's libibmad lacks " << name;
    }

    dump_fn* dump(const char* name) { return reinterpret_cast<dump_fn*>(dlsym(handle, name)); }

    bool load() {
        handle = dlmopen(LM_ID_NEWLM, debian_lib, RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            return false;
        bind(field_name, "mad_field_name");
        bind(get_field, "mad_get_field");
        bind(set_field, "mad_set_field");
        bind(get_field64, "mad_get_field64");
        bind(set_field64, "mad_set_field64");
        bind(get_array, "mad_get_array");
        bind(set_array, "mad_set_array");
        bind(decode_field, "mad_decode_field");
        bind(encode_field, "mad_encode_field");
        bind(dump_field, "mad_dump_field");
        bind(dump_val, "mad_dump_val");
        bind(print_field, "mad_print_field");
        bind(dump_fields, "mad_dump_fields");
        bind(xdump, "xdump");
        bind(flush, "fflush");
        return true;
    }
};

Reference& ref() {
    static Reference r;
    static bool tried;
    if (!tried) {
        tried = true;
        r.load();
    }
    return r;
}

#define NEED_REFERENCE()                                                  \
    do {                                                                  \
        if (!ref().handle)                                                \
            GTEST_SKIP() << debian_lib << " not loadable: " << dlerror(); \
    } while (0)

// All the mad_dump_* value/attribute formatters of the ABI.
// A list, one or more names a line; not reflowed:
// clang-format off
#define DUMP_FUNCTIONS(X)                                                    \
    X(int) X(uint) X(hex) X(rhex) X(bitfield) X(array) X(string)         \
    X(linkwidth) X(linkwidthsup) X(linkwidthen) X(linkdowndefstate)     \
    X(linkspeed) X(linkspeedsup) X(linkspeeden) X(linkspeedext)         \
    X(linkspeedextsup) X(linkspeedexten) X(portstate) X(portstates)     \
    X(physportstate) X(portcapmask) X(portcapmask2) X(mtu) X(vlcap)     \
    X(opervls) X(node_type) X(sltovl) X(vlarbitration) X(nodedesc)      \
    X(nodeinfo) X(portinfo) X(switchinfo) X(perfcounters)               \
    X(perfcounters_ext) X(perfcounters_xmt_sl) X(perfcounters_rcv_sl)   \
    X(perfcounters_xmt_disc) X(perfcounters_rcv_err)                    \
    X(portsamples_control) X(port_ext_speeds_counters)                  \
    X(perfcounters_port_op_rcv_counters)                                \
    X(perfcounters_port_flow_ctl_counters)                              \
    X(perfcounters_port_vl_op_packet) X(perfcounters_port_vl_op_data)   \
    X(perfcounters_port_vl_xmit_flow_ctl_update_errors)                 \
    X(perfcounters_port_vl_xmit_wait_counters)                          \
    X(perfcounters_sw_port_vl_congestion) X(perfcounters_rcv_con_ctrl)  \
    X(perfcounters_sl_rcv_fecn) X(perfcounters_sl_rcv_becn)             \
    X(perfcounters_xmit_con_ctrl) X(perfcounters_vl_xmit_time_cong)     \
    X(mlnx_ext_port_info) X(cc_congestioninfo) X(cc_congestionkeyinfo)  \
    X(cc_congestionlog) X(cc_congestionlogswitch)                       \
    X(cc_congestionlogentryswitch) X(cc_congestionlogca)                \
    X(cc_congestionlogentryca) X(cc_switchcongestionsetting)            \
    X(cc_switchportcongestionsettingelement) X(cc_cacongestionsetting)  \
    X(cc_cacongestionentry) X(cc_congestioncontroltable)                \
    X(cc_congestioncontroltableentry) X(cc_timestamp)                   \
    X(classportinfo) X(portsamples_result) X(portinfo_ext)              \
    X(port_ext_speeds_counters_rsfec_active)
// clang-format on

struct DumpPair {
    const char* name;
    dump_fn* ours;
};

const std::vector<DumpPair>& dump_functions() {
#define ENTRY(n) {"mad_dump_" #n, mad_dump_##n},
    static const std::vector<DumpPair> all = {DUMP_FUNCTIONS(ENTRY)};
#undef ENTRY
    return all;
}

// Formatters that ignore the size they are given (the reference writes
// past a small buffer): compared only with room to spare.
bool unbounded(const std::string& name) {
    return name == "mad_dump_portcapmask" || name == "mad_dump_portcapmask2" || name == "mad_dump_array" ||
        name == "mad_dump_nodedesc";
}

// Formatters that write "0" with sprintf when the value is 0, one byte past
// a buffer of one byte.
bool zero_unbounded(const std::string& name) {
    return name == "mad_dump_linkspeedextsup" || name == "mad_dump_linkspeedexten";
}

// Formatters whose warnings (on stderr) are the only difference: the size
// argument tells them apart.
bool number_formatter(const std::string& name) {
    return name == "mad_dump_int" || name == "mad_dump_uint" || name == "mad_dump_hex" || name == "mad_dump_rhex";
}

struct Buffers {
    std::vector<uint8_t> a, b;
    explicit Buffers(const std::vector<uint8_t>& init) : a(init), b(init) {}
};

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& c : v)
        c = static_cast<uint8_t>(rng());
    return v;
}

// The patterns every accessor sees.
std::vector<std::vector<uint8_t>> patterns(size_t n, int randoms) {
    std::mt19937 rng(4242);
    std::vector<std::vector<uint8_t>> p;
    p.emplace_back(n, 0x00);
    p.emplace_back(n, 0xff);
    p.emplace_back(n, 0x55);
    std::vector<uint8_t> ramp(n);
    for (size_t i = 0; i < n; i++)
        ramp[i] = static_cast<uint8_t>(i);
    p.push_back(ramp);
    for (int i = 0; i < randoms; i++)
        p.push_back(random_bytes(rng, n));
    return p;
}

bool is_field(int f) { return ref().field_name(f)[0] != 0; }

int bitlen(int f) {
    // The length is not exported; the dump size tells it in bytes, the
    // accessors on an all-ones buffer tell narrow fields in bits.
    std::vector<uint8_t> ones(1024, 0xff);
    uint32_t v = mad_get_field(ones.data(), 0, static_cast<enum MAD_FIELDS>(f));
    return v == 0xffffffffu ? 32 : 32 - __builtin_clz(v | 1);
}

// Bytes written into a text buffer, up to its NUL, within its size.
std::string text(const char* buf, int bufsz) {
    if (bufsz <= 0)
        return {};
    return std::string(buf, strnlen(buf, bufsz));
}

// Runs fn with file descriptor `out` (stdout or stderr) going to a file;
// returns what it printed.
template <typename F>
std::string capture(int out, F fn) {
    fflush(nullptr);
    char path[] = "/tmp/ibmad_fields_testXXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    int saved = dup(out);
    dup2(fd, out);
    fn();
    fflush(nullptr);
    dup2(saved, out);
    close(saved);
    std::string text;
    lseek(fd, 0, SEEK_SET);
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        text.append(chunk, n);
    close(fd);
    unlink(path);
    return text;
}

template <typename F>
std::string capture_stdout(F fn) {
    return capture(1, fn);
}

}  // namespace

TEST(Fields, EnumMatchesDebianTableSize) {
    NEED_REFERENCE();
    // Debian's table ends with an empty IB_FIELD_LAST_ entry at 666.
    EXPECT_STREQ(ref().field_name(debian_field_last), "");
    EXPECT_STREQ(ref().field_name(debian_field_last - 1), "");
    EXPECT_STRNE(ref().field_name(debian_field_last - 2), "");
    EXPECT_EQ(IB_PORT_EXT_NDR_FEC_MODE_LAST_F, debian_field_last - 1);
    EXPECT_GT(IB_FIELD_LAST_, debian_field_last);
}

TEST(Fields, Names) {
    NEED_REFERENCE();
    for (int f = 0; f < debian_field_last; f++)
        EXPECT_STREQ(mad_field_name(static_cast<enum MAD_FIELDS>(f)), ref().field_name(f)) << "field " << f;
    EXPECT_STREQ(mad_field_name(IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F), "LinkSpeedExtActive2");
    EXPECT_STREQ(mad_field_name(IB_PORT_LINK_SPEED_EXT_SUPPORTED_2_F), "LinkSpeedExtSupported2");
    EXPECT_STREQ(mad_field_name(IB_PORT_LINK_SPEED_EXT_ENABLED_2_F), "LinkSpeedExtEnabled2");
}

TEST(Fields, Get) {
    NEED_REFERENCE();
    const auto pats = patterns(1024, 12);
    const int bases[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 64};
    for (int f = 0; f < debian_field_last; f++) {
        for (const auto& p : pats) {
            for (int base : bases) {
                Buffers b(p);
                ASSERT_EQ(mad_get_field(b.a.data(), base, static_cast<enum MAD_FIELDS>(f)),
                          ref().get_field(b.b.data(), base, f))
                    << "field " << f << " base " << base;
                ASSERT_EQ(mad_get_field64(b.a.data(), base, static_cast<enum MAD_FIELDS>(f)),
                          ref().get_field64(b.b.data(), base, f))
                    << "field " << f << " base " << base;
                std::vector<uint8_t> va(512, 0xa5), vb(512, 0xa5);
                mad_get_array(b.a.data(), base, static_cast<enum MAD_FIELDS>(f), va.data());
                ref().get_array(b.b.data(), base, f, vb.data());
                ASSERT_EQ(va, vb) << "array of field " << f << " base " << base;
            }
        }
    }
}

TEST(Fields, Set) {
    NEED_REFERENCE();
    std::mt19937 rng(7);
    const auto pats = patterns(1024, 4);
    const int bases[] = {0, 1, 2, 3, 4, 7, 64};
    const uint32_t values[] = {0, 1, 0x80000000u, 0xffffffffu, 0x12345678u};
    for (int f = 0; f < debian_field_last; f++) {
        for (const auto& p : pats) {
            for (int base : bases) {
                std::vector<uint32_t> vals(std::begin(values), std::end(values));
                vals.push_back(rng());
                for (uint32_t v : vals) {
                    Buffers b(p);
                    mad_set_field(b.a.data(), base, static_cast<enum MAD_FIELDS>(f), v);
                    ref().set_field(b.b.data(), base, f, v);
                    ASSERT_EQ(b.a, b.b) << "set field " << f << " base " << base << " value " << v;
                }
                const uint64_t v64 = (uint64_t(rng()) << 32) | rng();
                Buffers b(p);
                mad_set_field64(b.a.data(), base, static_cast<enum MAD_FIELDS>(f), v64);
                ref().set_field64(b.b.data(), base, f, v64);
                ASSERT_EQ(b.a, b.b) << "set64 field " << f << " base " << base;

                auto src = random_bytes(rng, 512);
                Buffers c(p);
                mad_set_array(c.a.data(), base, static_cast<enum MAD_FIELDS>(f), src.data());
                ref().set_array(c.b.data(), base, f, src.data());
                ASSERT_EQ(c.a, c.b) << "set_array field " << f << " base " << base;
            }
        }
    }
}

TEST(Fields, SetGetRoundTrip) {
    std::mt19937 rng(11);
    for (int f = 1; f < IB_FIELD_LAST_; f++) {
        const int len = bitlen(f);
        if (len == 0 || len > 32 || !mad_field_name(static_cast<enum MAD_FIELDS>(f))[0])
            continue;
        std::vector<uint8_t> buf(1024, 0);
        const uint32_t mask = len == 32 ? 0xffffffffu : (1u << len) - 1;
        for (int i = 0; i < 8; i++) {
            const uint32_t v = rng() & mask;
            mad_set_field(buf.data(), 0, static_cast<enum MAD_FIELDS>(f), v);
            EXPECT_EQ(mad_get_field(buf.data(), 0, static_cast<enum MAD_FIELDS>(f)), v) << "field " << f;
        }
    }
}

TEST(Fields, DecodeEncode) {
    NEED_REFERENCE();
    const auto pats = patterns(1024, 6);
    std::mt19937 rng(3);
    for (int f = 0; f < debian_field_last; f++) {
        for (const auto& p : pats) {
            Buffers b(p);
            std::vector<uint8_t> va(512, 0x5a), vb(512, 0x5a);
            mad_decode_field(b.a.data(), static_cast<enum MAD_FIELDS>(f), va.data());
            ref().decode_field(b.b.data(), f, vb.data());
            ASSERT_EQ(va, vb) << "decode field " << f;

            auto src = random_bytes(rng, 512);
            Buffers e(p);
            mad_encode_field(e.a.data(), static_cast<enum MAD_FIELDS>(f), src.data());
            ref().encode_field(e.b.data(), f, src.data());
            ASSERT_EQ(e.a, e.b) << "encode field " << f;
        }
    }
}

// mad_dump_field and mad_dump_val for every field with a formatter, on
// values taken from random buffers and edge values, with buffers of many
// sizes.
TEST(Fields, DumpFieldAndVal) {
    NEED_REFERENCE();
    const auto pats = patterns(1024, 6);
    const int sizes[] = {33, 34, 35, 40, 48, 64, 100, 256, 2048};
    for (int f = 1; f < debian_field_last; f++) {
        if (!is_field(f))
            continue;
        const std::string name = ref().field_name(f);
        for (const auto& p : pats) {
            std::vector<uint8_t> val(512, 0);
            ref().decode_field(const_cast<uint8_t*>(p.data()), f, val.data());
            val.back() = 0;
            for (int bufsz : sizes) {
                // Capability masks and byte arrays are formatted
                // without regard to the size: only with room.
                if (bufsz < 2048 && (f == IB_PORT_CAPMASK_F || f == IB_PORT_CAPMASK2_F))
                    continue;
                std::vector<char> a(4096, 0), b(4096, 0);
                char* ra = mad_dump_field(static_cast<enum MAD_FIELDS>(f), a.data(), bufsz, val.data());
                char* rb = ref().dump_field(f, b.data(), bufsz, val.data());
                ASSERT_EQ(ra == nullptr, rb == nullptr) << name << " " << bufsz;
                ASSERT_EQ(text(a.data(), bufsz), text(b.data(), bufsz))
                    << "dump_field " << name << " (" << f << ") bufsz " << bufsz;

                std::fill(a.begin(), a.end(), 0);
                std::fill(b.begin(), b.end(), 0);
                const int vsz = bufsz - 33;
                if (vsz <= 0)
                    continue;
                ra = mad_dump_val(static_cast<enum MAD_FIELDS>(f), a.data(), vsz, val.data());
                rb = ref().dump_val(f, b.data(), vsz, val.data());
                ASSERT_EQ(ra == nullptr, rb == nullptr) << name;
                ASSERT_EQ(text(a.data(), vsz), text(b.data(), vsz))
                    << "dump_val " << name << " (" << f << ") bufsz " << vsz;
            }
        }
    }
    char buf[64];
    uint32_t v = 0;
    EXPECT_EQ(mad_dump_field(IB_NODE_TYPE_F, buf, 32, &v), nullptr);
    EXPECT_EQ(ref().dump_field(IB_NODE_TYPE_F, buf, 32, &v), nullptr);
}

TEST(Fields, PrintField) {
    NEED_REFERENCE();
    const auto pats = patterns(1024, 2);
    for (int f = 1; f < debian_field_last; f++) {
        if (!is_field(f) || f == IB_PORT_CAPMASK_F)
            continue;
        for (const auto& p : pats) {
            std::vector<uint8_t> val(512, 0);
            ref().decode_field(const_cast<uint8_t*>(p.data()), f, val.data());
            val.back() = 0;
            for (const char* name : {(const char*)nullptr, "Custom", ""}) {
                int ra = 0, rb = 0;
                std::string oa =
                    capture_stdout([&] { ra = mad_print_field(static_cast<enum MAD_FIELDS>(f), name, val.data()); });
                std::string ob = capture_stdout([&] {
                    rb = ref().print_field(f, name, val.data());
                    ref().flush(nullptr);
                });
                ASSERT_EQ(oa, ob) << "print_field " << f;
                ASSERT_EQ(ra, rb) << "print_field " << f;
            }
        }
    }
    EXPECT_EQ(mad_print_field(IB_NO_FIELD, nullptr, nullptr), -1);
}

// Every mad_dump_* function on random and edge buffers with many buffer
// and value sizes.
TEST(Dump, EveryFunction) {
    NEED_REFERENCE();
    auto pats = patterns(2048, 16);
    const int sizes[] = {4096, 2000, 512, 200, 100, 64, 40, 34, 33, 20, 12, 10, 9, 5, 4, 3, 2, 1, 0};
    const int valsizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64, 256};
    for (auto& p : pats)
        p.back() = 0;  // strings end inside the buffer
    for (const auto& fn : dump_functions()) {
        dump_fn* theirs = ref().dump(fn.name);
        ASSERT_NE(theirs, nullptr) << fn.name;
        for (const auto& p : pats) {
            for (int bufsz : sizes) {
                if (bufsz < 4096 && unbounded(fn.name))
                    continue;
                if (bufsz < 2 && zero_unbounded(fn.name))
                    continue;
                for (int valsz : valsizes) {
                    if (number_formatter(fn.name) && (valsz < 1 || valsz > 8))
                        continue;  // a warning on stderr, no text
                    Buffers v(p);
                    std::vector<char> a(8192, 0), b(8192, 0);
                    fn.ours(a.data(), bufsz, v.a.data(), valsz);
                    theirs(b.data(), bufsz, v.b.data(), valsz);
                    ASSERT_EQ(text(a.data(), bufsz), text(b.data(), bufsz))
                        << fn.name << " bufsz " << bufsz << " valsz " << valsz;
                    ASSERT_EQ(v.a, v.b) << fn.name << " changed its input";
                }
            }
        }
    }
}

// The value formatters that take an int, on every small value and the
// extremes.
TEST(Dump, EnumeratedValues) {
    NEED_REFERENCE();
    std::vector<int> values;
    for (int i = -2; i < 600; i++)
        values.push_back(i);
    for (int v : {INT_MIN, INT_MAX, 0x7fff, 0xffff, 0x10000, 0xffffff, 1 << 30})
        values.push_back(v);
    for (const auto& fn : dump_functions()) {
        dump_fn* theirs = ref().dump(fn.name);
        for (int v : values) {
            for (int bufsz : {4096, 30, 16, 13, 12, 11, 8, 5, 4, 3, 2, 1}) {
                if (bufsz < 4096 && unbounded(fn.name))
                    continue;
                if (bufsz < 2 && zero_unbounded(fn.name))
                    continue;
                // "Extended link speeds disabled" is sprintf'ed whole.
                if (bufsz < 30 && v == 30 && !strcmp(fn.name, "mad_dump_linkspeedexten"))
                    continue;
                uint8_t in[256] = {};  // room for the widest payload a dump reads (PortCountersExtended)
                memcpy(in, &v, sizeof(v));
                std::vector<char> a(8192, 0), b(8192, 0);
                fn.ours(a.data(), bufsz, in, 4);
                theirs(b.data(), bufsz, in, 4);
                ASSERT_EQ(text(a.data(), bufsz), text(b.data(), bufsz))
                    << fn.name << " value " << v << " bufsz " << bufsz;
            }
        }
    }
}

// The warnings on stderr ("ibwarn: [pid] function: ..."), the same pid in
// one process.
TEST(Dump, Warnings) {
    NEED_REFERENCE();
    uint64_t v = 0x1122334455667788ull;
    for (const char* name : {"mad_dump_int", "mad_dump_uint", "mad_dump_hex", "mad_dump_rhex", "mad_dump_linkwidth"}) {
        dump_fn* theirs = ref().dump(name);
        dump_fn* ours = nullptr;
        for (const auto& fn : dump_functions())
            if (!strcmp(fn.name, name))
                ours = fn.ours;
        ASSERT_NE(ours, nullptr);
        for (int valsz : {-2, -1, 0, 9, 64, INT_MAX}) {
            char a[64] = "x", b[64] = "x";
            std::string ea = capture(2, [&] { ours(a, sizeof(a), &v, valsz); });
            std::string eb = capture(2, [&] { theirs(b, sizeof(b), &v, valsz); });
            EXPECT_EQ(ea, eb) << name << " valsz " << valsz;
            EXPECT_STREQ(a, b) << name << " valsz " << valsz;
        }
    }
}

TEST(Dump, Fields) {
    NEED_REFERENCE();
    const auto pats = patterns(1024, 4);
    // Debian calls a NULL formatter for the entries that are not fields and
    // decodes into a 72 byte scratch value: the ranges avoid both.
    const int ranges[][2] = {{IB_NODE_FIRST_F, IB_NODE_LAST_F},
                             {IB_PORT_FIRST_F, IB_PORT_LAST_F},
                             {IB_SW_FIRST_F, IB_SW_LAST_F},
                             {1, 20},
                             {107, 120},
                             {600, 615},
                             {616, 622},
                             {5, 5},
                             {9, 3}};
    for (const auto& r : ranges) {
        for (const auto& p : pats) {
            for (int bufsz : {4096, 300, 100, 40, 34, 33, 1, 0}) {
                Buffers v(p);
                std::vector<char> a(8192, 0), b(8192, 0);
                mad_dump_fields(a.data(), bufsz, v.a.data(), 1024, r[0], r[1]);
                ref().dump_fields(b.data(), bufsz, v.b.data(), 1024, r[0], r[1]);
                ASSERT_EQ(text(a.data(), bufsz), text(b.data(), bufsz))
                    << "fields " << r[0] << ".." << r[1] << " bufsz " << bufsz;
            }
        }
    }
}

TEST(Dump, Xdump) {
    NEED_REFERENCE();
    std::mt19937 rng(5);
    auto data = random_bytes(rng, 300);
    for (int size : {0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 255, 256, 300}) {
        for (const char* msg : {(const char*)nullptr, "msg:\n"}) {
            char *pa = nullptr, *pb = nullptr;
            size_t la = 0, lb = 0;
            FILE* fa = open_memstream(&pa, &la);
            FILE* fb = open_memstream(&pb, &lb);
            xdump(fa, msg, data.data(), size);
            ref().xdump(fb, msg, data.data(), size);
            fclose(fa);
            fclose(fb);
            EXPECT_EQ(std::string(pa, la), std::string(pb, lb)) << "size " << size;
            free(pa);
            free(pb);
        }
    }
}

// Field ids outside the table answer "nothing" instead of reading past it.
TEST(Fields, InvalidIdsDoNotCrash) {
    std::vector<uint8_t> buf(1024, 0xab);
    const auto before = buf;
    char text_buf[256];
    uint8_t val[512] = {};
    for (int f : {-1, -1000, INT_MIN, (int)IB_FIELD_LAST_ + 1, 100000, INT_MAX}) {
        auto e = static_cast<enum MAD_FIELDS>(f);
        EXPECT_EQ(mad_get_field(buf.data(), 0, e), 0u);
        EXPECT_EQ(mad_get_field64(buf.data(), 0, e), 0u);
        mad_set_field(buf.data(), 0, e, 0xffffffff);
        mad_set_field64(buf.data(), 0, e, ~0ull);
        mad_set_array(buf.data(), 0, e, val);
        mad_get_array(buf.data(), 0, e, val);
        mad_decode_field(buf.data(), e, val);
        mad_encode_field(buf.data(), e, val);
        EXPECT_EQ(buf, before);
        EXPECT_STREQ(mad_field_name(e), "");
        EXPECT_EQ(mad_dump_field(e, text_buf, sizeof(text_buf), val), nullptr);
        EXPECT_EQ(mad_dump_val(e, text_buf, sizeof(text_buf), val), nullptr);
        EXPECT_EQ(mad_print_field(e, nullptr, val), -1);
        mad_dump_fields(text_buf, sizeof(text_buf), buf.data(), 1024, f, f < INT_MAX - 3 ? f + 3 : INT_MAX);
    }
    // IB_FIELD_LAST_ and the end markers are entries without a formatter.
    for (int f : {(int)IB_NO_FIELD, (int)IB_FIELD_LAST_, (int)IB_PORT_LAST_F, (int)IB_PORT_LINK_SPEED_EXT_2_LAST_F}) {
        auto e = static_cast<enum MAD_FIELDS>(f);
        EXPECT_EQ(mad_dump_field(e, text_buf, sizeof(text_buf), val), nullptr);
        EXPECT_EQ(mad_dump_val(e, text_buf, sizeof(text_buf), val), nullptr);
        EXPECT_EQ(mad_print_field(e, nullptr, val), -1);
    }
    EXPECT_EQ(mad_dump_val(IB_NODE_TYPE_F, text_buf, 0, val), nullptr);
    EXPECT_EQ(mad_dump_val(IB_NODE_TYPE_F, text_buf, -5, val), nullptr);
}

// The XDR additions Debian 44 lacks: their own formatting.
TEST(Fields, LinkSpeedExt2) {
    char buf[128];
    int v = 0;
    mad_dump_linkspeedext2(buf, sizeof(buf), &v, 4);
    EXPECT_STREQ(buf, "No Extended Speed 2");
    v = 1;
    mad_dump_linkspeedext2(buf, sizeof(buf), &v, 4);
    EXPECT_STREQ(buf, "212.5 Gbps");
    v = 0;
    mad_dump_linkspeedextsup2(buf, sizeof(buf), &v, 4);
    EXPECT_STREQ(buf, "0");
    v = 1;
    mad_dump_linkspeedexten2(buf, sizeof(buf), &v, 4);
    EXPECT_STREQ(buf, "212.5 Gbps");
    v = 3;
    mad_dump_linkspeedexten2(buf, sizeof(buf), &v, 4);
    EXPECT_STREQ(buf, " undefined (3)");

    uint8_t pi[64] = {};
    mad_set_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F, 1);
    mad_set_field(pi, 0, IB_PORT_LINK_SPEED_EXT_SUPPORTED_2_F, 1);
    mad_set_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ENABLED_2_F, 1);
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F), 1u);
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_SUPPORTED_2_F), 1u);
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ENABLED_2_F), 1u);
    // They live in PortInfo byte 56 (bits 449-450, 451-452, 453-455), which
    // the older fields leave alone.
    EXPECT_EQ(pi[56], 0x29);
    pi[56] = 0x52;  // 0 10 10 010
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F), 2u);
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_SUPPORTED_2_F), 2u);
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ENABLED_2_F), 2u);
    pi[56] = 0x29;
    for (int i = 0; i < 64; i++) {
        if (i != 56) {
            EXPECT_EQ(pi[i], 0) << "byte " << i;
        }
    }
    EXPECT_EQ(mad_get_field(pi, 0, IB_PORT_LINK_ROUND_TRIP_F), 0u);
}
