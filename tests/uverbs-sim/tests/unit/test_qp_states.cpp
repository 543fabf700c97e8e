// The QP state machine behind MODIFY_QP (legacy and extended): every valid
// RC/UC/UD transition with its required attributes, the attributes each
// transition may not carry, invalid transitions, value checks.
#include "write_fixture.h"

using namespace uvsim_test;

UVSIM_TEST_ENV("qp", uvsim_test::kTwoDevices)

namespace {

class QpStates : public WriteTest, public ::testing::WithParamInterface<uint8_t> {
protected:
    void SetUp() override {
        WriteTest::SetUp();
        context();
        pd_ = pd();
        cq_ = cq();
        qp_ = qp(pd_, cq_, type());
    }
    uint8_t type() const { return GetParam(); }
    uint8_t state() { return query(qp_).qp_state; }

    // the usual attributes of each step
    ib_uverbs_modify_qp step(uint8_t to) {
        switch (to) {
        case IBV_QPS_INIT: return to_init(qp_, type());
        case IBV_QPS_RTR: return to_rtr(qp_, type(), 0x42, 3);
        case IBV_QPS_RTS: return to_rts(qp_, type());
        default: return to_state(qp_, to);
        }
    }
    void walk_to(uint8_t s) {
        static const uint8_t path[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD};
        if (s == IBV_QPS_RESET)
            return;
        if (s == IBV_QPS_ERR) {
            ASSERT_EQ(modify(step(IBV_QPS_INIT)), 0);
            ASSERT_EQ(modify(to_state(qp_, IBV_QPS_ERR)), 0);
            return;
        }
        for (uint8_t p : path) {
            ASSERT_EQ(modify(step(p)), 0) << "to " << int(p);
            if (p == s)
                return;
        }
    }

    uint32_t pd_ = 0, cq_ = 0, qp_ = 0;
};

const char* type_name(const ::testing::TestParamInfo<uint8_t>& i) {
    return i.param == IBV_QPT_RC ? "RC" : i.param == IBV_QPT_UC ? "UC" : "UD";
}

INSTANTIATE_TEST_SUITE_P(Types, QpStates, ::testing::Values(IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD),
                         [](const auto& i) { return std::string(type_name(i)); });

// the attributes a transition needs (ib_modify_qp_is_ok)
uint32_t required(uint8_t type, uint8_t from, uint8_t to) {
    if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        return IBV_QP_PKEY_INDEX | IBV_QP_PORT | (type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
    if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
        if (type == IBV_QPT_UD)
            return 0;
        uint32_t m = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (type == IBV_QPT_RC)
            m |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        return m;
    }
    if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        uint32_t m = IBV_QP_SQ_PSN;
        if (type == IBV_QPT_RC)
            m |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        return m;
    }
    return 0;
}

}  // namespace

TEST_P(QpStates, EveryValidTransition) {
    // (target, with the attributes of the usual step or the state alone)
    const std::pair<uint8_t, bool> walk[] = {{IBV_QPS_INIT, true},   {IBV_QPS_INIT, false}, {IBV_QPS_RTR, true},
                                             {IBV_QPS_RTS, true},    {IBV_QPS_RTS, false},  {IBV_QPS_SQD, false},
                                             {IBV_QPS_SQD, false},   {IBV_QPS_RTS, false},  {IBV_QPS_ERR, false},
                                             {IBV_QPS_RESET, false}, {IBV_QPS_INIT, true},  {IBV_QPS_RESET, false}};
    uint8_t cur = IBV_QPS_RESET;
    for (auto [to, with_attrs] : walk) {
        ASSERT_EQ(modify(with_attrs ? step(to) : to_state(qp_, to)), 0) << int(cur) << " -> " << int(to);
        ASSERT_EQ(state(), to);
        cur = to;
    }
}

TEST_P(QpStates, ErrorFromEveryStateButReset) {
    for (uint8_t s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD}) {
        ASSERT_EQ(modify(to_state(qp_, IBV_QPS_RESET)), 0);
        walk_to(s);
        ASSERT_EQ(state(), s);
        EXPECT_EQ(modify(to_state(qp_, IBV_QPS_ERR)), 0) << int(s);
        EXPECT_EQ(state(), IBV_QPS_ERR);
    }
    ASSERT_EQ(modify(to_state(qp_, IBV_QPS_RESET)), 0);
    EXPECT_EQ(modify(to_state(qp_, IBV_QPS_ERR)), -EINVAL);  // RESET -> ERR is not a transition
    EXPECT_EQ(state(), IBV_QPS_RESET);
    EXPECT_EQ(modify(to_state(qp_, IBV_QPS_RESET)), 0);  // RESET -> RESET is
}

TEST_P(QpStates, RequiredAttributes) {
    const std::pair<uint8_t, uint8_t> steps[] = {
        {IBV_QPS_RESET, IBV_QPS_INIT}, {IBV_QPS_INIT, IBV_QPS_RTR}, {IBV_QPS_RTR, IBV_QPS_RTS}};
    for (auto [from, to] : steps) {
        walk_to(from);
        ASSERT_EQ(state(), from);
        const uint32_t req = required(type(), from, to);
        for (uint32_t bit = 1; bit; bit <<= 1) {
            if (!(req & bit))
                continue;
            ib_uverbs_modify_qp m = step(to);
            ASSERT_TRUE(m.attr_mask & bit) << "the helper sets every required attribute";
            m.attr_mask &= ~bit;
            EXPECT_EQ(modify(m), -EINVAL) << int(from) << " -> " << int(to) << " without 0x" << std::hex << bit;
            EXPECT_EQ(state(), from);
        }
        ASSERT_EQ(modify(step(to)), 0);
        ASSERT_EQ(modify(to_state(qp_, IBV_QPS_RESET)), 0);
    }
}

TEST_P(QpStates, AttributesATransitionMayNotCarry) {
    // RESET -> INIT: no path, PSNs or the other type's key
    for (uint32_t extra : {uint32_t(IBV_QP_AV), uint32_t(IBV_QP_SQ_PSN), uint32_t(IBV_QP_DEST_QPN),
                           uint32_t(IBV_QP_TIMEOUT), uint32_t(type() == IBV_QPT_UD ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY),
                           uint32_t(IBV_QP_CAP), uint32_t(1u << 25)}) {
        ib_uverbs_modify_qp m = step(IBV_QPS_INIT);
        m.attr_mask |= extra;
        EXPECT_EQ(modify(m), -EINVAL) << "extra 0x" << std::hex << extra;
        EXPECT_EQ(state(), IBV_QPS_RESET);
    }
    walk_to(IBV_QPS_RTS);
    // RTS -> RTS may not change the path MTU or the destination
    for (uint32_t extra : {uint32_t(IBV_QP_PATH_MTU), uint32_t(IBV_QP_DEST_QPN), uint32_t(IBV_QP_RQ_PSN)}) {
        ib_uverbs_modify_qp m = to_state(qp_, IBV_QPS_RTS);
        m.attr_mask |= extra;
        m.path_mtu = IBV_MTU_1024;
        EXPECT_EQ(modify(m), -EINVAL) << "extra 0x" << std::hex << extra;
    }
    // without a state change the attributes are checked against cur -> cur
    ib_uverbs_modify_qp m{};
    m.qp_handle = qp_;
    m.attr_mask = IBV_QP_PORT;
    m.port_num = 1;
    EXPECT_EQ(modify(m), -EINVAL);
    EXPECT_EQ(state(), IBV_QPS_RTS);
}

TEST_P(QpStates, InvalidTransitions) {
    const std::pair<uint8_t, uint8_t> bad[] = {
        {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQD},
        {IBV_QPS_RESET, IBV_QPS_SQE}, {IBV_QPS_INIT, IBV_QPS_RTS},  {IBV_QPS_INIT, IBV_QPS_SQD},
        {IBV_QPS_RTR, IBV_QPS_INIT},  {IBV_QPS_RTR, IBV_QPS_RTR},   {IBV_QPS_RTR, IBV_QPS_SQD},
        {IBV_QPS_RTS, IBV_QPS_INIT},  {IBV_QPS_RTS, IBV_QPS_RTR},   {IBV_QPS_SQD, IBV_QPS_INIT},
        {IBV_QPS_ERR, IBV_QPS_INIT},  {IBV_QPS_ERR, IBV_QPS_RTS},   {IBV_QPS_RTS, IBV_QPS_SQE}};
    for (auto [from, to] : bad) {
        ASSERT_EQ(modify(to_state(qp_, IBV_QPS_RESET)), 0);
        walk_to(from);
        ASSERT_EQ(state(), from);
        // with everything the target state could want
        ib_uverbs_modify_qp m =
            to == IBV_QPS_INIT || to == IBV_QPS_RTR || to == IBV_QPS_RTS ? step(to) : to_state(qp_, to);
        EXPECT_EQ(modify(m), -EINVAL) << int(from) << " -> " << int(to);
        EXPECT_EQ(state(), from);
    }
    // states that do not exist
    for (uint8_t s : {uint8_t(7), uint8_t(8), uint8_t(255)}) {
        EXPECT_EQ(modify(to_state(qp_, s)), -EINVAL) << int(s);
        ib_uverbs_modify_qp m = to_state(qp_, IBV_QPS_RESET);
        m.attr_mask |= IBV_QP_CUR_STATE;
        m.cur_qp_state = s;
        EXPECT_EQ(modify(m), -EINVAL) << "cur " << int(s);
    }
}

TEST_P(QpStates, CurrentStateMustMatch) {
    walk_to(IBV_QPS_RTR);
    ib_uverbs_modify_qp m = step(IBV_QPS_RTS);
    m.attr_mask |= IBV_QP_CUR_STATE;
    m.cur_qp_state = IBV_QPS_INIT;
    EXPECT_EQ(modify(m), -EINVAL);
    m.cur_qp_state = IBV_QPS_RTR;
    EXPECT_EQ(modify(m), 0);
    EXPECT_EQ(state(), IBV_QPS_RTS);
}

TEST_P(QpStates, ValueChecks) {
    auto init_with = [&](auto change) {
        ib_uverbs_modify_qp m = step(IBV_QPS_INIT);
        change(m);
        return modify(m);
    };
    EXPECT_EQ(init_with([](auto& m) { m.port_num = 0; }), -EINVAL);
    EXPECT_EQ(init_with([](auto& m) { m.port_num = 3; }), -EINVAL);
    EXPECT_EQ(init_with([](auto& m) { m.pkey_index = 128; }), -EINVAL);
    if (type() != IBV_QPT_UD) {
        EXPECT_EQ(init_with([](auto& m) { m.qp_access_flags = 1u << 30; }), -EINVAL);
    }
    EXPECT_EQ(state(), IBV_QPS_RESET);
    ASSERT_EQ(init_with([](auto& m) { m.port_num = 2; }), 0);
    if (type() == IBV_QPT_UD)
        return;  // the rest are connected-QP attributes
    auto rtr_with = [&](auto change) {
        ib_uverbs_modify_qp m = step(IBV_QPS_RTR);
        change(m);
        return modify(m);
    };
    EXPECT_EQ(rtr_with([](auto& m) { m.path_mtu = 0; }), -EINVAL);
    EXPECT_EQ(rtr_with([](auto& m) { m.path_mtu = 6; }), -EINVAL);
    EXPECT_EQ(rtr_with([](auto& m) { m.dest_qp_num = 1u << 24; }), -EINVAL);
    EXPECT_EQ(rtr_with([](auto& m) { m.dest.sl = 16; }), -EINVAL);
    EXPECT_EQ(rtr_with([](auto& m) { m.dest.port_num = 3; }), -EINVAL);
    EXPECT_EQ(rtr_with([](auto& m) {
                  m.dest.is_global = 1;
                  m.dest.sgid_index = 1;
              }),
              -EINVAL);
    if (type() == IBV_QPT_RC) {
        EXPECT_EQ(rtr_with([](auto& m) { m.max_dest_rd_atomic = 17; }), -EINVAL);
        EXPECT_EQ(rtr_with([](auto& m) { m.min_rnr_timer = 32; }), -EINVAL);
    }
    EXPECT_EQ(state(), IBV_QPS_INIT);
    ASSERT_EQ(rtr_with([](auto& m) { m.path_mtu = IBV_MTU_4096; }), 0);
    if (type() == IBV_QPT_RC) {
        auto rts_with = [&](auto change) {
            ib_uverbs_modify_qp m = step(IBV_QPS_RTS);
            change(m);
            return modify(m);
        };
        EXPECT_EQ(rts_with([](auto& m) { m.timeout = 32; }), -EINVAL);
        EXPECT_EQ(rts_with([](auto& m) { m.retry_cnt = 8; }), -EINVAL);
        EXPECT_EQ(rts_with([](auto& m) { m.rnr_retry = 8; }), -EINVAL);
        EXPECT_EQ(rts_with([](auto& m) { m.max_rd_atomic = 17; }), -EINVAL);
        EXPECT_EQ(state(), IBV_QPS_RTR);
    }
}

TEST_P(QpStates, QueryShowsWhatWasSet) {
    walk_to(IBV_QPS_RTS);
    auto q = query(qp_);
    EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
    EXPECT_EQ(q.port_num, 1);
    EXPECT_EQ(q.pkey_index, 0);
    EXPECT_EQ(q.sq_psn, 0x123u);
    if (type() == IBV_QPT_UD) {
        EXPECT_EQ(q.qkey, 0x11111111u);
        return;
    }
    EXPECT_EQ(q.qp_access_flags, uint32_t(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
    EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
    EXPECT_EQ(q.dest_qp_num, 0x42u);
    EXPECT_EQ(q.rq_psn, 0x123u);
    EXPECT_EQ(q.dest.dlid, 3);
    EXPECT_EQ(q.dest.port_num, 1);
    if (type() == IBV_QPT_RC) {
        EXPECT_EQ(q.timeout, 14);
        EXPECT_EQ(q.retry_cnt, 7);
        EXPECT_EQ(q.rnr_retry, 7);
        EXPECT_EQ(q.max_rd_atomic, 1);
        EXPECT_EQ(q.max_dest_rd_atomic, 1);
        EXPECT_EQ(q.min_rnr_timer, 12);
    }
}

TEST_P(QpStates, PsnsAreTwentyFourBits) {
    walk_to(IBV_QPS_INIT);
    ib_uverbs_modify_qp m = step(IBV_QPS_RTR);
    m.rq_psn = 0xff123456;  // (UD: not in the mask, ignored)
    ASSERT_EQ(modify(m), 0);
    m = step(IBV_QPS_RTS);
    m.sq_psn = 0xab654321;
    ASSERT_EQ(modify(m), 0);
    auto q = query(qp_);
    EXPECT_EQ(q.sq_psn, 0x654321u);
    if (type() != IBV_QPT_UD) {
        EXPECT_EQ(q.rq_psn, 0x123456u);
    }
}

TEST_P(QpStates, ExtendedModify) {
    ok(ex_modify_qp(A(kResp), step(IBV_QPS_INIT)));
    auto r = resp<ib_uverbs_ex_modify_qp_resp>();
    EXPECT_EQ(r.response_length, sizeof r);
    EXPECT_EQ(state(), IBV_QPS_INIT);
    ib_uverbs_modify_qp m = to_state(qp_, IBV_QPS_INIT);
    m.attr_mask |= IBV_QP_RATE_LIMIT;
    EXPECT_EQ(run(ex_modify_qp(A(kResp), m)), -EOPNOTSUPP);
    m.attr_mask = IBV_QP_STATE | (1u << 30);
    EXPECT_EQ(run(ex_modify_qp(A(kResp), m)), -EOPNOTSUPP);
    // the legacy command does not know those bits either
    EXPECT_EQ(modify(m), -EINVAL);
}

TEST_P(QpStates, ModifyWithoutTheCoreStructIsInvalid) {
    ib_uverbs_cmd_hdr h{IB_USER_VERBS_CMD_MODIFY_QP, 4, 0};
    Bytes b;
    append(b, &h, sizeof h);
    b.resize(16);
    EXPECT_EQ(run(b), -EINVAL);
}

// RoCE: the path of a connected QP needs a GRH
class QpRoce : public WriteTest {
    int dev_index() const override { return 1; }
};

TEST_F(QpRoce, PathNeedsAGrh) {
    context();
    const uint32_t p = pd(), c = cq(), q = qp(p, c, IBV_QPT_RC);
    ASSERT_EQ(modify(to_init(q, IBV_QPT_RC)), 0);
    EXPECT_EQ(modify(to_rtr(q, IBV_QPT_RC, 0x42, 0, false)), -EINVAL);
    ib_uverbs_modify_qp m = to_rtr(q, IBV_QPT_RC, 0x42, 0, true);
    m.dest.sgid_index = 4;  // four GIDs on this port
    EXPECT_EQ(modify(m), -EINVAL);
    m.dest.sgid_index = 3;
    EXPECT_EQ(modify(m), 0);
    EXPECT_EQ(query(q).qp_state, IBV_QPS_RTR);
    // the Ethernet port has one P_Key
    ASSERT_EQ(modify(to_state(q, IBV_QPS_RESET)), 0);
    ib_uverbs_modify_qp i = to_init(q, IBV_QPT_RC);
    i.pkey_index = 1;
    EXPECT_EQ(modify(i), -EINVAL);
}

TEST_P(QpStates, AlternatePathIsChecked) {
    if (type() == IBV_QPT_UD)
        return;  // no alternate path on UD
    walk_to(IBV_QPS_RTR);
    auto rts_with = [&](auto change) {
        ib_uverbs_modify_qp m = step(IBV_QPS_RTS);
        m.attr_mask |= IBV_QP_ALT_PATH;
        m.alt_port_num = 2;
        m.alt_timeout = 14;
        m.alt_dest.dlid = 9;
        change(m);
        return modify(m);
    };
    EXPECT_EQ(rts_with([](auto& m) { m.alt_port_num = 0; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) { m.alt_port_num = 3; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) { m.alt_timeout = 32; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) { m.alt_pkey_index = 128; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) { m.alt_dest.sl = 16; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) { m.alt_dest.port_num = 5; }), -EINVAL);
    EXPECT_EQ(rts_with([](auto& m) {
                  m.attr_mask |= IBV_QP_PATH_MIG_STATE;
                  m.path_mig_state = IBV_MIG_ARMED + 1;
              }),
              -EINVAL);
    EXPECT_EQ(state(), IBV_QPS_RTR);
    EXPECT_EQ(rts_with([](auto& m) {
                  m.attr_mask |= IBV_QP_PATH_MIG_STATE;
                  m.path_mig_state = IBV_MIG_REARM;
              }),
              0);
    auto q = query(qp_);
    EXPECT_EQ(q.alt_port_num, 2);
    EXPECT_EQ(q.alt_timeout, 14);
    EXPECT_EQ(q.alt_dest.dlid, 9);
    EXPECT_EQ(q.path_mig_state, IBV_MIG_REARM);
}
