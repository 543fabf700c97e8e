// pyverbs.mem_alloc: raw memory for tests and applications that hand
// addresses to verbs (allocation, mappings, reads and writes at addresses).
// The caller vouches for every address it passes.
#include "pyverbs.h"

#include <endian.h>
#include <sys/mman.h>

#include <cstdlib>

using namespace pyverbs;

namespace {

char* at(uintptr_t addr, size_t offset) { return reinterpret_cast<char*>(addr) + offset; }

}  // namespace

PYBIND11_MODULE(mem_alloc, m) {
    m.doc() = "Raw memory: malloc, posix_memalign, mmap and access at addresses";

    m.def(
        "mmap",
        [](uintptr_t addr, size_t length, int prot, int flags, int fd, off_t offset) {
            void* p = ::mmap(reinterpret_cast<void*>(addr), length, prot, flags, fd, offset);
            if (p == MAP_FAILED) {
                PyErr_SetString(PyExc_MemoryError, "Failed to mmap memory");
                throw py::error_already_set();
            }
            return reinterpret_cast<uintptr_t>(p);
        },
        py::arg("addr") = 0, py::arg("length") = 100, py::arg("prot") = PROT_READ | PROT_WRITE,
        py::arg("flags") = MAP_PRIVATE | MAP_ANONYMOUS, py::arg("fd") = 0, py::arg("offset") = 0);
    m.def(
        "munmap",
        [](uintptr_t addr, size_t length) {
            if (::munmap(reinterpret_cast<void*>(addr), length)) {
                PyErr_SetString(PyExc_MemoryError, "Failed to munmap requested memory");
                throw py::error_already_set();
            }
        },
        py::arg("addr"), py::arg("length"));
    m.def(
        "madvise",
        [](uintptr_t addr, size_t length, int advice) {
            if (::madvise(reinterpret_cast<void*>(addr), length, advice))
                raise_rdma_errno("Failed to madvise the requested memory");
        },
        py::arg("addr"), py::arg("length"), py::arg("flags") = MADV_NORMAL);
    m.def(
        "malloc",
        [](size_t size) {
            void* p = ::malloc(size);
            if (!p) {
                PyErr_SetString(PyExc_MemoryError, "Failed to allocate memory");
                throw py::error_already_set();
            }
            return reinterpret_cast<uintptr_t>(p);
        },
        py::arg("size"));
    // Zeroed, as the reference's.
    m.def(
        "posix_memalign",
        [](size_t size, size_t alignment) {
            void* p = nullptr;
            if (int rc = ::posix_memalign(&p, alignment, size)) {
                PyErr_SetString(PyExc_MemoryError, ("Failed to allocate memory (" + std::to_string(rc) + ")").c_str());
                throw py::error_already_set();
            }
            memset(p, 0, size);
            return reinterpret_cast<uintptr_t>(p);
        },
        py::arg("size"), py::arg("alignment") = 8);
    m.def(
        "free", [](uintptr_t ptr) { ::free(reinterpret_cast<void*>(ptr)); }, py::arg("ptr"));
    // Offsets of the 32- and 64-bit accessors count elements, not bytes.
    m.def(
        "writebe32",
        [](uintptr_t addr, uint32_t val, size_t offset) { reinterpret_cast<uint32_t*>(addr)[offset] = htobe32(val); },
        py::arg("addr"), py::arg("val"), py::arg("offset") = 0);
    m.def(
        "writebe64",
        [](uintptr_t addr, uint64_t val, size_t offset) { reinterpret_cast<uint64_t*>(addr)[offset] = htobe64(val); },
        py::arg("addr"), py::arg("val"), py::arg("offset") = 0);
    m.def(
        "read32", [](uintptr_t addr, size_t offset) { return reinterpret_cast<const uint32_t*>(addr)[offset]; },
        py::arg("addr"), py::arg("offset") = 0);
    m.def(
        "read64", [](uintptr_t addr, size_t offset) { return reinterpret_cast<const uint64_t*>(addr)[offset]; },
        py::arg("addr"), py::arg("offset") = 0);
    m.def(
        "write",
        [](uintptr_t addr, py::object data, size_t length, size_t offset) {
            std::string bytes =
                py::isinstance<py::str>(data) ? data.cast<std::string>() : std::string(data.cast<py::bytes>());
            if (length > bytes.size())
                raise_user("length " + std::to_string(length) + " is past the " + std::to_string(bytes.size()) +
                           " bytes of data");
            memcpy(at(addr, offset), bytes.data(), length);
        },
        py::arg("addr"), py::arg("data"), py::arg("length"), py::arg("offset") = 0);
    m.def(
        "read", [](uintptr_t addr, size_t length, size_t offset) { return py::bytes(at(addr, offset), length); },
        py::arg("addr"), py::arg("length"), py::arg("offset") = 0);

    m.attr("PROT_EXEC_") = PROT_EXEC;
    m.attr("PROT_READ_") = PROT_READ;
    m.attr("PROT_WRITE_") = PROT_WRITE;
    m.attr("PROT_NONE_") = PROT_NONE;
    m.attr("MAP_PRIVATE_") = MAP_PRIVATE;
    m.attr("MAP_SHARED_") = MAP_SHARED;
    m.attr("MAP_FIXED_") = MAP_FIXED;
    m.attr("MAP_ANONYMOUS_") = MAP_ANONYMOUS;
    m.attr("MAP_STACK_") = MAP_STACK;
    m.attr("MAP_LOCKED_") = MAP_LOCKED;
    m.attr("MAP_HUGETLB_") = MAP_HUGETLB;
    m.attr("MAP_POPULATE_") = MAP_POPULATE;
    m.attr("MAP_NORESERVE_") = MAP_NORESERVE;
    m.attr("MAP_GROWSDOWN_") = MAP_GROWSDOWN;
}
