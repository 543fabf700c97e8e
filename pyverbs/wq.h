// The C++ side of pyverbs.wq, for the modules that take a receive work
// queue, an RSS indirection table or a hash configuration (QPInitAttrEx's
// ind_table and hash_conf): pyverbs.wq registers them.
#pragma once

#include "objects.h"

#include <vector>

namespace pyverbs {

// pyverbs.wq.WQ: a receive work queue on a Context (its parent), using a
// PD and a CQ (it depends on both).
class WQ : public CM {
public:
    ~WQ() override { close_quietly(); }
    ibv_wq* wq = nullptr;
    py::object context, pd, cq;

protected:
    void release() override {
        destroy_once(wq, ibv_destroy_wq, "Failed to dealloc WQ");
        context = pd = cq = py::object();
    }
};

// pyverbs.wq.RwqIndTable: an RSS indirection table on a Context (its
// parent) over WQs (it depends on each). A QP created with it should
// depend_on() it.
class RwqIndTable : public CM {
public:
    ~RwqIndTable() override { close_quietly(); }
    ibv_rwq_ind_table* table = nullptr;
    py::object context;
    py::list wqs;  // the WQ objects, as given

protected:
    void release() override {
        destroy_once(table, ibv_destroy_rwq_ind_table, "Failed to dealloc RWQ IND TBL");
        context = py::object();
    }
};

// pyverbs.wq.RxHashConf: an ibv_rx_hash_conf and the key it points to.
// c_conf() gives the C struct to copy into an ibv_qp_init_attr_ex; its key
// pointer stays valid while this object lives and its key is not set again
// (keep the Python object alongside the attribute that uses it).
struct RxHashConf : Object {
    uint8_t function = 0;
    uint8_t key_len = 0;
    uint64_t fields_mask = 0;
    std::vector<uint8_t> key;

    ibv_rx_hash_conf c_conf() {
        // A key shorter than key_len is padded with zeros: the provider
        // reads key_len bytes.
        if (key.size() < key_len)
            key.resize(key_len, 0);
        ibv_rx_hash_conf c{};
        c.rx_hash_function = function;
        c.rx_hash_key_len = key_len;
        c.rx_hash_key = key.empty() ? nullptr : key.data();
        c.rx_hash_fields_mask = fields_mask;
        return c;
    }
};

}  // namespace pyverbs
