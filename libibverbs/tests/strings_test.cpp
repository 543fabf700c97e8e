// Our string and rate helpers answer exactly as Debian's libibverbs does
// for every value (loaded side by side in its own link-map namespace).
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <string>

namespace {

constexpr const char* kReference = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";

class Reference : public ::testing::Test {
protected:
    void SetUp() override {
        handle_ = dlmopen(LM_ID_NEWLM, kReference, RTLD_NOW | RTLD_LOCAL);
        if (!handle_)
            GTEST_SKIP() << "Debian's libibverbs1 not installed: " << dlerror();
    }
    void TearDown() override {
        if (handle_)
            dlclose(handle_);
    }
    template <class F>
    F* fn(const char* name) {
        return reinterpret_cast<F*>(dlsym(handle_, name));
    }
    void* handle_ = nullptr;
};

}  // namespace

TEST_F(Reference, EnumStrings) {
    auto* node = fn<const char*(int)>("ibv_node_type_str");
    auto* port = fn<const char*(int)>("ibv_port_state_str");
    auto* event = fn<const char*(int)>("ibv_event_type_str");
    auto* wc = fn<const char*(int)>("ibv_wc_status_str");
    ASSERT_TRUE(node && port && event && wc);
    for (int v = -2; v < 40; ++v) {
        EXPECT_EQ(std::string(node(v)), ibv_node_type_str(static_cast<ibv_node_type>(v))) << v;
        EXPECT_EQ(std::string(port(v)), ibv_port_state_str(static_cast<ibv_port_state>(v))) << v;
        EXPECT_EQ(std::string(event(v)), ibv_event_type_str(static_cast<ibv_event_type>(v))) << v;
        EXPECT_EQ(std::string(wc(v)), ibv_wc_status_str(static_cast<ibv_wc_status>(v))) << v;
    }
}

TEST_F(Reference, RateConversions) {
    auto* to_mult = fn<int(int)>("ibv_rate_to_mult");
    auto* from_mult = fn<int(int)>("mult_to_ibv_rate");
    auto* to_mbps = fn<int(int)>("ibv_rate_to_mbps");
    auto* from_mbps = fn<int(int)>("mbps_to_ibv_rate");
    ASSERT_TRUE(to_mult && from_mult && to_mbps && from_mbps);
    for (int r = -1; r < 40; ++r) {
        EXPECT_EQ(to_mult(r), ibv_rate_to_mult(static_cast<ibv_rate>(r))) << r;
        EXPECT_EQ(to_mbps(r), ibv_rate_to_mbps(static_cast<ibv_rate>(r))) << r;
    }
    for (int m = -1; m < 64; ++m)
        EXPECT_EQ(from_mult(m), static_cast<int>(mult_to_ibv_rate(m))) << m;
    for (int r = 0; r < 40; ++r) {
        int mbps = to_mbps(r);
        EXPECT_EQ(from_mbps(mbps), static_cast<int>(mbps_to_ibv_rate(mbps))) << mbps;
    }
    EXPECT_EQ(from_mbps(12345), static_cast<int>(mbps_to_ibv_rate(12345)));
}
