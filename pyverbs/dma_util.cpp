// pyverbs.dma_util: the memory barriers and MMIO writes a program driving a
// device's queues itself (mlx5dv, efadv) orders its stores with, as
// rdma-core's util/udma_barrier.h and mmio.h define them for x86-64.
#include "pyverbs.h"

#include <endian.h>

using namespace pyverbs;

PYBIND11_MODULE(dma_util, m) {
    m.doc() = "DMA barriers and MMIO writes";
    // Stores to memory the device reads are ordered before what follows;
    // on x86 the stores are ordered already, the compiler must not move them.
    m.def("udma_to_dev_barrier", []() { asm volatile("" ::: "memory"); });
    m.def("udma_from_dev_barrier", []() { asm volatile("" ::: "memory"); });
    m.def(
        "mmio_write32_as_be",
        [](uintptr_t addr, uint32_t val) { *reinterpret_cast<volatile uint32_t*>(addr) = htobe32(val); },
        py::arg("addr"), py::arg("val"));
    m.def(
        "mmio_write64_as_be",
        [](uintptr_t addr, uint64_t val) { *reinterpret_cast<volatile uint64_t*>(addr) = htobe64(val); },
        py::arg("addr"), py::arg("val"));
}
