// The mlx5 provider (ConnectX-4 and later, BlueField): libibverbs' plugin
// for devices of the kernel's mlx5_ib driver. It lives in libmlx5.so.1,
// the direct-verbs library, and libmlx5-rdmav65.so is a link to it, so the
// mlx5dv_* entry points and the plugin share one copy of every object.
//
// This file: the device, the context (what GET_CONTEXT negotiated, the UAR
// pages and their doorbell registers, the core clock page) and the
// environment knobs. mlx5.cpp implements them.
#pragma once

#include "libibverbs/driver.h"

#include <rdma/mlx5-abi.h>

#include <cstdint>
#include <vector>

namespace rdma::mlx5 {

// MLX5_* environment variables, read once per context open. Those that
// steer queues not implemented yet are read and kept so that README.md can
// say exactly which take effect (see there).
struct Env {
    int total_uuars = 16;  // MLX5_TOTAL_UUARS (bfregs asked of the kernel)
    int low_lat_uuars = 4;  // MLX5_NUM_LOW_LAT_UUARS
    bool shut_up_bf = false;  // MLX5_SHUT_UP_BF: map UARs non-cached, no BlueFlame
    bool single_threaded = false;  // MLX5_SINGLE_THREADED: no locks on queues
    bool prefer_bf = false;  // MLX5_POST_SEND_PREFER_BF
    int cqe_size = 64;  // MLX5_CQE_SIZE (64 or 128)
    int scatter_to_cqe = 1;  // MLX5_SCATTER_TO_CQE
    int stall_cq_poll = 0;  // MLX5_STALL_CQ_POLL
    uint32_t debug_mask = 0;  // MLX5_DEBUG_MASK
    // 0, or the positive errno the reference's context open fails with for
    // a value it refuses (a bfreg count that is not positive or too large).
    int error = 0;
};

// Reads the variables from the process environment.
Env read_env();

// One doorbell register of a UAR page ("bfreg" in the kernel's words): the
// 8-byte doorbell, followed by buf_size bytes of BlueFlame buffer when the
// device writes-combine.
struct Bfreg {
    void* reg = nullptr;
    uint32_t buf_size = 0;
};

// Kernel facts the context open learned and every object needs.
struct Caps {
    uint32_t bf_reg_size = 0;
    uint32_t tot_bfregs = 0;
    uint32_t cache_line_size = 64;
    uint16_t max_sq_desc_sz = 0;
    uint16_t max_rq_desc_sz = 0;
    uint32_t max_send_wqebb = 0;
    uint32_t max_recv_wr = 0;
    uint32_t max_srq_recv_wr = 0;
    uint16_t num_ports = 0;
    uint8_t cqe_version = 0;
    uint8_t cmds_supp_uhw = 0;
    uint8_t eth_min_inline = 0;
    uint32_t comp_mask = 0;  // MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_*
    uint32_t dump_fill_mkey = 0;
    ibv_atomic_cap atomic_cap = IBV_ATOMIC_NONE;
    uint64_t device_cap_flags_ex = 0;
    uint8_t link_layer[2] = {};  // ports 1 and 2, IBV_LINK_LAYER_*
};

class Mlx5Context final : public verbs::Context {
public:
    Mlx5Context(verbs::Device& device, int cmd_fd);
    ~Mlx5Context() override;

    // Negotiates the user context with the kernel and maps its pages.
    // 0 or a positive errno; on failure the destructor releases what was
    // set up, and the caller still owns cmd_fd.
    int open();

    int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size) override;

    ibv_pd* alloc_pd() override;
    int dealloc_pd(ibv_pd* pd) override;
    ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) override;
    int rereg_mr(verbs::VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) override;
    int dereg_mr(verbs::VerbsMr* mr) override;

    const Env& env() const { return env_; }
    const Caps& caps() const { return caps_; }
    // The register a QP with the kernel's bfreg index uses, or null.
    const Bfreg* bfreg(uint32_t index) const { return index < bfregs_.size() ? &bfregs_[index] : nullptr; }
    // Where completion-queue arm doorbells go (UAR page 0, offset 0x20).
    void* cq_doorbell() const;
    // The free-running device clock (big-endian halves), null if unmapped.
    const volatile uint32_t* core_clock() const { return core_clock_; }

private:
    int get_context();
    int map_uars(long page);
    void map_core_clock(long page, uint64_t offset);
    void probe_device();

    Env env_;
    Caps caps_;
    std::vector<void*> uar_pages_;  // mmapped system pages of static UARs
    std::vector<Bfreg> bfregs_;  // indexed like the kernel's bfreg_index
    void* clock_page_ = nullptr;
    const volatile uint32_t* core_clock_ = nullptr;
    long page_size_ = 4096;
    uint32_t uar_size_log_ = 12;  // log2 of a UAR's size (0: one per page)
    uint32_t uars_per_page_ = 1;
};

struct Mlx5Pd {
    ibv_pd pd;
    uint32_t pdn;
};

inline Mlx5Context* to_mctx(ibv_context* c) { return static_cast<Mlx5Context*>(verbs::Context::from(c)); }

// Whether a device or context is one of this provider's (the mlx5dv_*
// entry points refuse others with EOPNOTSUPP, as the reference does).
bool is_mlx5_dev(const ibv_device* device);
bool is_mlx5_ctx(const ibv_context* context);

// The "%d.%d.%04d" rendering of mlx5 firmware versions.
void format_fw_ver(uint64_t raw, char* out, size_t len);

}  // namespace rdma::mlx5
