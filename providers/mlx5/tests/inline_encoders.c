/* The inline encoders of mlx5dv.h behind plain functions. This file is
 * compiled twice, against the reference header (SIDE=ref_) and against
 * ours (SIDE=ours_); inline_test.cpp feeds both the same inputs and
 * compares the bytes they write. */
#include <stddef.h>
#include <string.h>
#include <infiniband/mlx5dv.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(SIDE, name)

/* A made-up PRM layout: fields of 4, 12, 16, 32 and 64 bits. */
struct mlx5_ifc_sample_bits {
    uint8_t nibble[0x4];
    uint8_t twelve[0xc];
    uint8_t sixteen[0x10];
    uint8_t word[0x20];
    uint8_t reserved[0x20];
    uint8_t quad[0x40];
};

void FN(set_ctrl_seg)(void* seg, uint16_t pi, uint8_t opcode, uint8_t opmod, uint32_t qp_num, uint8_t fm_ce_se,
                      uint8_t ds, uint8_t signature, uint32_t imm) {
    mlx5dv_set_ctrl_seg(seg, pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
}

int FN(x86_set_ctrl_seg)(void* seg, uint16_t pi, uint8_t opcode, uint8_t opmod, uint32_t qp_num, uint8_t fm_ce_se,
                         uint8_t ds, uint8_t signature, uint32_t imm) {
#if defined(__SSE3__)
    mlx5dv_x86_set_ctrl_seg(seg, pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
    return 1;
#else
    return 0;
#endif
}

void FN(set_data_seg)(void* seg, uint32_t length, uint32_t lkey, uintptr_t address) {
    mlx5dv_set_data_seg(seg, length, lkey, address);
}

int FN(x86_set_data_seg)(void* seg, uint32_t length, uint32_t lkey, uintptr_t address) {
#if defined(__SSE3__)
    mlx5dv_x86_set_data_seg(seg, length, lkey, address);
    return 1;
#else
    return 0;
#endif
}

void FN(set_dgram_seg)(void* seg, uint64_t key, uint32_t dqp_dct, uint8_t ext, uint8_t stat_rate_sl, uint8_t fl_mlid,
                       uint16_t rlid, uint8_t* rmac, uint8_t tclass, uint8_t hop_limit, uint32_t grh_gid_fl,
                       uint8_t* rgid) {
    mlx5dv_set_dgram_seg(seg, key, dqp_dct, ext, stat_rate_sl, fl_mlid, rlid, rmac, tclass, hop_limit, grh_gid_fl,
                         rgid);
}

void FN(set_eth_seg)(void* seg, uint8_t cs_flags, uint16_t mss, uint16_t inline_hdr_sz, uint8_t* hdr) {
    mlx5dv_set_eth_seg(seg, cs_flags, mss, inline_hdr_sz, hdr);
}

/* Owner, solicited, format and opcode of the CQE, then the CQE after
 * setting the owner bit to val. */
uint32_t FN(cqe_fields)(void* cqe, uint8_t val) {
    struct mlx5_cqe64* c = cqe;
    uint32_t r = mlx5dv_get_cqe_owner(c) | mlx5dv_get_cqe_se(c) << 1 | mlx5dv_get_cqe_format(c) << 2 |
        mlx5dv_get_cqe_opcode(c) << 4;

    mlx5dv_set_cqe_owner(c, val);
    return r;
}

uint64_t FN(ts_to_ns)(const void* clock_info, uint64_t ts) {
    struct mlx5dv_clock_info ci;

    memcpy(&ci, clock_info, sizeof(ci));
    return mlx5dv_ts_to_ns(&ci, ts);
}

/* Set every field of the sample layout, then read each back. */
void FN(devx_fields)(void* buf, const uint32_t v[4], uint64_t q, uint64_t out[5]) {
    DEVX_SET(sample, buf, nibble, v[0]);
    DEVX_SET(sample, buf, twelve, v[1]);
    DEVX_SET(sample, buf, sixteen, v[2]);
    DEVX_SET(sample, buf, word, v[3]);
    DEVX_SET64(sample, buf, quad, q);
    out[0] = DEVX_GET(sample, buf, nibble);
    out[1] = DEVX_GET(sample, buf, twelve);
    out[2] = DEVX_GET(sample, buf, sixteen);
    out[3] = DEVX_GET(sample, buf, word);
    out[4] = DEVX_GET64(sample, buf, quad) + DEVX_ST_SZ_BYTES(sample) + DEVX_BYTE_OFF(sample, word) +
        DEVX_FLD_SZ_BYTES(sample, quad);
}
