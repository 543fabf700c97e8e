// pyverbs.providers.mlx5.mlx5dv_objects: the mlx5 driver's view of verbs
// objects (mlx5dv_init_obj): a CQ's ring and number, a QP's queue numbers,
// a PD's number, an SRQ's stride and number.
#include "mlx5_objects.h"

using namespace pyverbs;

namespace {

struct DvPD : Object {
    mlx5dv_pd dv_pd{};
};
struct DvCQ : Object {
    mlx5dv_cq dv_cq{};
};
struct DvQP : Object {
    mlx5dv_qp dv_qp{};
};
struct DvSRQ : Object {
    mlx5dv_srq dv_srq{};
};

// Mlx5DvObj: the objects init_obj filled (None until then), each keeping
// the verbs object it describes alive.
struct DvObj : Object {
    py::object pd = py::none(), cq = py::none(), qp = py::none(), srq = py::none();
    py::list sources;
};

py::object get(const py::kwargs& kw, const char* key) {
    return kw.contains(key) ? py::reinterpret_borrow<py::object>(kw[key]) : py::none();
}

void init_obj(DvObj& self, uint64_t obj_type, const py::kwargs& kw) {
    py::object cq = get(kw, "cq"), qp = get(kw, "qp"), pd = get(kw, "pd"), srq = get(kw, "srq");
    if (cq.is_none() && qp.is_none() && pd.is_none() && srq.is_none())
        raise_user("No supported object was provided.");
    mlx5dv_obj obj{};
    std::shared_ptr<DvCQ> dv_cq;
    std::shared_ptr<DvQP> dv_qp;
    std::shared_ptr<DvPD> dv_pd;
    std::shared_ptr<DvSRQ> dv_srq;
    py::list sources;
    if (py::bool_(cq)) {
        dv_cq = std::make_shared<DvCQ>();
        obj.cq.in = any_cq(cq);
        obj.cq.out = &dv_cq->dv_cq;
        sources.append(cq);
    }
    if (py::bool_(qp)) {
        dv_qp = std::make_shared<DvQP>();
        py::object mask = get(kw, "qp_comp_mask");
        dv_qp->dv_qp.comp_mask = py::bool_(mask)
            ? mask.cast<uint64_t>()
            : uint64_t(MLX5DV_QP_MASK_UAR_MMAP_OFFSET | MLX5DV_QP_MASK_RAW_QP_HANDLES | MLX5DV_QP_MASK_RAW_QP_TIR_ADDR);
        obj.qp.in = open_arg<QP>(qp, "QP").qp;
        obj.qp.out = &dv_qp->dv_qp;
        sources.append(qp);
    }
    if (py::bool_(pd)) {
        dv_pd = std::make_shared<DvPD>();
        obj.pd.in = open_arg<PD>(pd, "PD").pd;
        obj.pd.out = &dv_pd->dv_pd;
        sources.append(pd);
    }
    if (py::bool_(srq)) {
        dv_srq = std::make_shared<DvSRQ>();
        py::object mask = get(kw, "srq_comp_mask");
        dv_srq->dv_srq.comp_mask = py::bool_(mask) ? mask.cast<uint64_t>() : uint64_t(MLX5DV_SRQ_MASK_SRQN);
        obj.srq.in = open_arg<SRQ>(srq, "SRQ").srq;
        obj.srq.out = &dv_srq->dv_srq;
        sources.append(srq);
    }
    // (as in the reference, the objects handed over are described only
    // when obj_type names them; the others stay zero)
    if (int rc = mlx5dv_init_obj(&obj, obj_type))
        raise_rdma("Failed to initialize Mlx5DvObj", rc);
    if (dv_cq)
        self.cq = py::cast(dv_cq);
    if (dv_qp)
        self.qp = py::cast(dv_qp);
    if (dv_pd)
        self.pd = py::cast(dv_pd);
    if (dv_srq)
        self.srq = py::cast(dv_srq);
    self.sources = sources;
}

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

#define RO(cls, name, expr) def_property_readonly(name, [](const cls& o) { return expr; })

PYBIND11_MODULE(mlx5dv_objects, m) {
    import_deps({"pyverbs.base", "pyverbs.pd", "pyverbs.cq", "pyverbs.qp", "pyverbs.srq"});
    m.doc() = "The mlx5 attributes of verbs objects, from mlx5dv_init_obj";

    py::class_<DvPD, Object, std::shared_ptr<DvPD>>(m, "Mlx5DvPD", "mlx5dv_pd")
        .def(py::init<>())
        .RO(DvPD, "pdn", o.dv_pd.pdn)
        .RO(DvPD, "comp_mask", o.dv_pd.comp_mask);

    py::class_<DvCQ, Object, std::shared_ptr<DvCQ>>(m, "Mlx5DvCQ", "mlx5dv_cq")
        .def(py::init<>())
        .RO(DvCQ, "cqe_size", o.dv_cq.cqe_size)
        .RO(DvCQ, "comp_mask", o.dv_cq.comp_mask)
        .RO(DvCQ, "cqn", o.dv_cq.cqn)
        .RO(DvCQ, "buf", addr(o.dv_cq.buf))
        .RO(DvCQ, "cq_uar", addr(o.dv_cq.cq_uar))
        .RO(DvCQ, "dbrec", addr(o.dv_cq.dbrec))
        .RO(DvCQ, "cqe_cnt", o.dv_cq.cqe_cnt);

    py::class_<DvQP, Object, std::shared_ptr<DvQP>>(m, "Mlx5DvQP", "mlx5dv_qp")
        .def(py::init<>())
        .RO(DvQP, "rqn", o.dv_qp.rqn)
        .RO(DvQP, "sqn", o.dv_qp.sqn)
        .RO(DvQP, "tirn", o.dv_qp.tirn)
        .RO(DvQP, "tisn", o.dv_qp.tisn)
        .def_property(
            "comp_mask", [](const DvQP& o) { return o.dv_qp.comp_mask; },
            [](DvQP& o, uint64_t v) { o.dv_qp.comp_mask = v; })
        .RO(DvQP, "uar_mmap_offset", (long long)o.dv_qp.uar_mmap_offset);

    py::class_<DvSRQ, Object, std::shared_ptr<DvSRQ>>(m, "Mlx5DvSRQ", "mlx5dv_srq")
        .def(py::init<>())
        .RO(DvSRQ, "stride", o.dv_srq.stride)
        .RO(DvSRQ, "head", o.dv_srq.head)
        .RO(DvSRQ, "tail", o.dv_srq.tail)
        .def_property(
            "comp_mask", [](const DvSRQ& o) { return o.dv_srq.comp_mask; },
            [](DvSRQ& o, uint64_t v) { o.dv_srq.comp_mask = v; })
        .RO(DvSRQ, "srqn", o.dv_srq.srqn);

    py::class_<DvObj, Object, std::shared_ptr<DvObj>>(m, "Mlx5DvObj", "mlx5dv_obj: mlx5dv_init_obj's objects")
        .def(py::init([](py::object obj_type, py::kwargs kw) {
                 auto o = std::make_shared<DvObj>();
                 if (!obj_type.is_none())
                     init_obj(*o, obj_type.cast<uint64_t>(), kw);
                 return o;
             }),
             py::arg("obj_type") = py::none())
        .def(
            "init_obj", [](DvObj& self, uint64_t obj_type, py::kwargs kw) { init_obj(self, obj_type, kw); },
            py::arg("obj_type"))
        .def_property_readonly("dvcq", [](const DvObj& o) { return o.cq; })
        .def_property_readonly("dvqp", [](const DvObj& o) { return o.qp; })
        .def_property_readonly("dvpd", [](const DvObj& o) { return o.pd; })
        .def_property_readonly("dvsrq", [](const DvObj& o) { return o.srq; });
}
