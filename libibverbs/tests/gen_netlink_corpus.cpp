// Writes the seed corpus of fuzz_netlink_reply (corpus/netlink_reply/):
// RDMA netlink replies built with libnl as the kernel sends them, plus a
// few malformed ones. Run once by hand; the output files are committed:
//   g++ -std=c++20 -Ikernel-headers $(pkg-config --cflags --libs libnl-3.0) \
//       libibverbs/tests/gen_netlink_corpus.cpp -o /tmp/gen && \
//       /tmp/gen libibverbs/tests/corpus/netlink_reply
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

namespace {

std::string g_dir;

void emit(const char* file, int cmd, const std::function<void(nl_msg*)>& fill) {
    nl_msg* msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), NLM_F_MULTI);
    fill(msg);
    nlmsghdr* hdr = nlmsg_hdr(msg);
    FILE* f = fopen((g_dir + "/" + file).c_str(), "wb");
    if (!f || fwrite(hdr, 1, hdr->nlmsg_len, f) != hdr->nlmsg_len) {
        perror(file);
        return;
    }
    fclose(f);
    nlmsg_free(msg);
}

void device(nl_msg* m, uint32_t index, const char* name, const char* protocol) {
    nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index);
    nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name);
    nla_put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1c00);
    nla_put_string(m, RDMA_NLDEV_ATTR_FW_VERSION, "16.35.2000");
    nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, 0xa8ee47fffef3e393ull);
    nla_put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0xa8ee47fffef3e393ull);
    nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA);
    nla_put_string(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, protocol);
}

void chardev(nl_msg* m, const char* name, uint64_t cdev, uint64_t abi, uint64_t driver) {
    nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
    nla_put_u64(m, RDMA_NLDEV_ATTR_CHARDEV, cdev);
    nla_put_u64(m, RDMA_NLDEV_ATTR_CHARDEV_ABI, abi);
    nla_put_u64(m, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, driver);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    emit("dev_rxe0", RDMA_NLDEV_CMD_GET, [](nl_msg* m) { device(m, 1, "rxe0", "roce"); });
    emit("dev_mlx5_ib", RDMA_NLDEV_CMD_GET, [](nl_msg* m) { device(m, 3, "mlx5_0", "ib"); });
    emit("dev_index_u8", RDMA_NLDEV_CMD_GET, [](nl_msg* m) {
        nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_INDEX, 7);
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "siw0");
    });
    emit("dev_no_name", RDMA_NLDEV_CMD_GET, [](nl_msg* m) {
        nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 2);
        nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, 1);
    });
    emit("dev_dotdot", RDMA_NLDEV_CMD_GET, [](nl_msg* m) { device(m, 4, "..", "ib"); });
    emit("dev_slash", RDMA_NLDEV_CMD_GET, [](nl_msg* m) { device(m, 5, "../../etc", "ib"); });
    emit("dev_unterminated", RDMA_NLDEV_CMD_GET, [](nl_msg* m) {
        nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 9);
        nla_put(m, RDMA_NLDEV_ATTR_DEV_NAME, 5, "efa_0");
        nla_put_u16(m, RDMA_NLDEV_ATTR_NODE_GUID, 0xbeef);
    });
    emit("dev_twice", RDMA_NLDEV_CMD_GET, [](nl_msg* m) {
        device(m, 1, "first", "ib");
        nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 8);
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "");
    });
    emit("chardev_uverbs0", RDMA_NLDEV_CMD_GET_CHARDEV,
         [](nl_msg* m) { chardev(m, "uverbs0", (231ull << 8) | 192, 1, RDMA_DRIVER_RXE); });
    emit("chardev_mlx5", RDMA_NLDEV_CMD_GET_CHARDEV,
         [](nl_msg* m) { chardev(m, "uverbs3", (231ull << 8) | 195, 1, RDMA_DRIVER_MLX5); });
    emit("chardev_u32", RDMA_NLDEV_CMD_GET_CHARDEV, [](nl_msg* m) {
        nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs1");
        nla_put_u32(m, RDMA_NLDEV_ATTR_CHARDEV, 59329);
        nla_put_u32(m, RDMA_NLDEV_ATTR_CHARDEV_ABI, 6);
        nla_put(m, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 3, "\x01\x02\x03");
    });
    emit("chardev_nested_flag", RDMA_NLDEV_CMD_GET_CHARDEV, [](nl_msg* m) {
        nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_NAME | NLA_F_NESTED, "uverbs2");
        nla_put_u64(m, RDMA_NLDEV_ATTR_CHARDEV | NLA_F_NET_BYTEORDER, 1);
    });
    emit("sys_cof_on", RDMA_NLDEV_CMD_SYS_GET, [](nl_msg* m) {
        nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1);
        nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
    });
    emit("sys_cof_off", RDMA_NLDEV_CMD_SYS_GET, [](nl_msg* m) {
        nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0);
        nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 0);
    });
    emit("sys_empty", RDMA_NLDEV_CMD_SYS_GET, [](nl_msg*) {});
    // A truncated attribute (length past the end) after a good one.
    emit("truncated", RDMA_NLDEV_CMD_GET, [](nl_msg* m) {
        nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "rxe1");
        nlattr* a = static_cast<nlattr*>(nlmsg_reserve(m, 8, NLA_ALIGNTO));
        a->nla_len = 200;
        a->nla_type = RDMA_NLDEV_ATTR_DEV_NAME;
    });
    return 0;
}
