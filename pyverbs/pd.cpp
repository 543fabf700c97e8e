// pyverbs.pd: protection domains.
#include "objects.h"
// pyverbs.cmid: PD(creator=cmid)
#include "cmid.h"

using namespace pyverbs;

namespace {

std::shared_ptr<PD> make_pd(py::object creator, py::kwargs kw) {
    // pyverbs.cmid: a CMID's PD is librdmacm's PD of its device (cmid.h).
    if (is_cmid(creator))
        return pd_of_cmid(creator);
    Context& ctx = open_arg<Context>(creator, "Context");
    auto pd = std::make_shared<PD>();
    if (kw.contains("handle") && !kw["handle"].is_none()) {
        uint32_t handle = kw["handle"].cast<uint32_t>();
        pd->pd = ibv_import_pd(ctx.ctx, handle);
        if (!pd->pd)
            raise_rdma_errno("Failed to import PD");
        pd->imported = true;
    } else {
        pd->pd = ibv_alloc_pd(ctx.ctx);
        if (!pd->pd)
            raise_rdma_errno("Failed to allocate PD");
    }
    pd->context = creator;
    pd->adopt(creator, ctx);
    return pd;
}

// The Python allocators of a parent domain (ParentDomainContext).
struct ParentDomainContext : Object {
    py::object pd, alloc, free, user_data;
};

struct ParentDomainInitAttr : Object {
    ibv_parent_domain_init_attr attr{};
    py::object pd, pd_context;
};

// A parent domain: a PD of its own standing for its protection domain.
class ParentDomain : public PD {
public:
    py::object protection_domain, pd_context;
};

// The trampolines the provider calls to allocate a queue's memory; they
// run inside a verb that pyverbs called with the GIL held, or on the
// provider's own thread (hence the acquire). An allocator that raises
// fails the allocation (NULL), which fails the verb.
void* pd_alloc(ibv_pd*, void* pd_context, size_t size, size_t alignment, uint64_t resource_type) {
    py::gil_scoped_acquire gil;
    auto* c = static_cast<ParentDomainContext*>(pd_context);
    try {
        py::object addr =
            c->alloc(c->pd, py::cast(c, py::return_value_policy::reference), size, alignment, resource_type);
        return reinterpret_cast<void*>(addr.cast<uintptr_t>());
    } catch (py::error_already_set& e) {
        e.discard_as_unraisable("ParentDomainContext.alloc");
    } catch (const py::cast_error&) {}
    return nullptr;
}

void pd_free(ibv_pd*, void* pd_context, void* ptr, uint64_t resource_type) {
    py::gil_scoped_acquire gil;
    auto* c = static_cast<ParentDomainContext*>(pd_context);
    try {
        c->free(c->pd, py::cast(c, py::return_value_policy::reference), reinterpret_cast<uintptr_t>(ptr),
                resource_type);
    } catch (py::error_already_set& e) {
        e.discard_as_unraisable("ParentDomainContext.free");
    }
}

}  // namespace

PYBIND11_MODULE(pd, m) {
    import_deps({"pyverbs.base", "pyverbs.device"});
    m.doc() = "Protection domains";

    py::class_<PD, CM, std::shared_ptr<PD>>(m, "PD")
        .def(py::init(&make_pd), py::arg("creator"))
        .def_property_readonly("handle", [](py::handle self) { return open_arg<PD>(self, "PD").pd->handle; })
        .def_property_readonly("ctx", [](const PD& p) { return p.context; })
        .def("unimport", [](PD& p) { p.close(); })
        // ibv_advise_mr: prefetch the pages of on-demand-paging MRs that
        // the SGEs (pyverbs.wr.SGE) name; 0, or PyverbsRDMAError.
        .def(
            "advise_mr",
            [](py::handle self, uint32_t advice, uint32_t flags, py::list sg_list) {
                PD& p = open_arg<PD>(self, "PD");
                py::module_::import("pyverbs.wr");
                std::vector<ibv_sge> sges;
                for (py::handle h : sg_list) {
                    if (!py::isinstance<SGE>(h))
                        throw py::type_error("advise_mr: sg_list must hold SGE objects");
                    sges.push_back(h.cast<SGE&>().sge);
                }
                const int rc = ibv_advise_mr(p.pd, static_cast<ibv_advise_mr_advice>(advice), flags, sges.data(),
                                             static_cast<uint32_t>(sges.size()));
                if (rc)
                    raise_rdma("Failed to advise MR", rc);
                return rc;
            },
            py::arg("advise"), py::arg("flags"), py::arg("sg_list"));

    py::class_<ParentDomainContext, Object, std::shared_ptr<ParentDomainContext>>(m, "ParentDomainContext")
        .def(py::init([](py::object pd, py::object alloc_func, py::object free_func, py::object user_data) {
                 arg_as<PD>(pd, "PD");
                 auto c = std::make_shared<ParentDomainContext>();
                 c->pd = pd;
                 c->alloc = alloc_func;
                 c->free = free_func;
                 c->user_data = user_data;
                 return c;
             }),
             py::arg("pd"), py::arg("alloc_func"), py::arg("free_func"), py::arg("user_data") = py::none())
        .def_property(
            "user_data", [](const ParentDomainContext& c) { return c.user_data; },
            [](ParentDomainContext& c, py::object v) { c.user_data = v; });

    py::class_<ParentDomainInitAttr, Object, std::shared_ptr<ParentDomainInitAttr>>(m, "ParentDomainInitAttr")
        .def(py::init([](py::object pd, py::object pd_context) {
                 auto a = std::make_shared<ParentDomainInitAttr>();
                 a->attr.pd = open_arg<PD>(pd, "PD").pd;
                 a->pd = pd;
                 if (!pd_context.is_none()) {
                     a->attr.pd_context = &arg_as<ParentDomainContext>(pd_context, "ParentDomainContext");
                     a->attr.alloc = pd_alloc;
                     a->attr.free = pd_free;
                     a->attr.comp_mask =
                         IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT | IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
                 }
                 a->pd_context = pd_context;
                 return a;
             }),
             py::arg("pd"), py::arg("pd_context") = py::none())
        .def_property_readonly("comp_mask", [](const ParentDomainInitAttr& a) { return a.attr.comp_mask; });

    py::class_<ParentDomain, PD, std::shared_ptr<ParentDomain>>(m, "ParentDomain")
        .def(py::init([](py::object context, py::object attr) {
                 Context& ctx = open_arg<Context>(context, "Context");
                 ParentDomainInitAttr& a = arg_as<ParentDomainInitAttr>(attr, "ParentDomainInitAttr");
                 PD& protection = open_arg<PD>(a.pd, "PD");
                 ibv_parent_domain_init_attr init = a.attr;
                 init.pd = protection.pd;
                 auto p = std::make_shared<ParentDomain>();
                 p->pd = ibv_alloc_parent_domain(ctx.ctx, &init);
                 if (!p->pd)
                     raise_rdma_errno("Failed to allocate Parent Domain");
                 p->context = context;
                 p->adopt(context, ctx);
                 // The protection domain closes its parent domains first; the
                 // allocators live as long as the domain.
                 p->depend_on(a.pd, protection);
                 p->protection_domain = a.pd;
                 p->pd_context = a.pd_context;
                 return p;
             }),
             py::arg("context"), py::arg("attr"));
}
