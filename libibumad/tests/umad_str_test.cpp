// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// umad_str.h against Debian's libibumad: every class, class x method,
// class x attribute and both status decoders over their whole input range.
// Debian's library is loaded with dlmopen into its own link namespace, so
// its same-soname symbols cannot resolve to ours.
#include <infiniband/umad_str.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <string>

namespace {

struct Reference {
    void* h = nullptr;
    decltype(&umad_class_str) class_str = nullptr;
    decltype(&umad_method_str) method_str = nullptr;
    decltype(&umad_attribute_str) attr_str = nullptr;
    decltype(&umad_common_mad_status_str) common_str = nullptr;
    decltype(&umad_sa_mad_status_str) sa_str = nullptr;

    Reference() {
        h = dlmopen(LM_ID_NEWLM, "/usr/lib/x86_64-linux-gnu/libibumad.so.3", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return;
        class_str = reinterpret_cast<decltype(class_str)>(dlsym(h, "umad_class_str"));
        method_str = reinterpret_cast<decltype(method_str)>(dlsym(h, "umad_method_str"));
        attr_str = reinterpret_cast<decltype(attr_str)>(dlsym(h, "umad_attribute_str"));
        common_str = reinterpret_cast<decltype(common_str)>(dlsym(h, "umad_common_mad_status_str"));
        sa_str = reinterpret_cast<decltype(sa_str)>(dlsym(h, "umad_sa_mad_status_str"));
    }
};

Reference& ref() {
    static Reference r;
    return r;
}

#define NEED_REF()                                                  \
    do {                                                            \
        if (!ref().h)                                               \
            GTEST_SKIP() << "Debian's libibumad3 is not installed"; \
    } while (0)

TEST(UmadStr, Classes) {
    NEED_REF();
    for (unsigned c = 0; c < 256; c++)
        EXPECT_EQ(std::string(umad_class_str(c)), ref().class_str(c)) << "class " << c;
}

TEST(UmadStr, Methods) {
    NEED_REF();
    for (unsigned c = 0; c < 256; c++)
        for (unsigned m = 0; m < 256; m++)
            ASSERT_EQ(std::string(umad_method_str(c, m)), ref().method_str(c, m)) << "class " << c << " method " << m;
}

TEST(UmadStr, Attributes) {
    NEED_REF();
    for (unsigned c = 0; c < 256; c++)
        for (unsigned a = 0; a < 65536; a++)
            ASSERT_EQ(std::string(umad_attribute_str(c, htons(a))), ref().attr_str(c, htons(a)))
                << "class " << c << " attr " << a;
}

TEST(UmadStr, Status) {
    NEED_REF();
    for (unsigned s = 0; s < 65536; s++) {
        ASSERT_EQ(std::string(umad_common_mad_status_str(htons(s))), ref().common_str(htons(s))) << "status " << s;
        ASSERT_EQ(std::string(umad_sa_mad_status_str(htons(s))), ref().sa_str(htons(s))) << "status " << s;
    }
}

}  // namespace
