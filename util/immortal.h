// A process-wide object that is built on first use and never destroyed:
// for state that threads still running while exit() runs static
// destructors (a library's service thread, LD_PRELOAD interposers called
// from other libraries' destructors) may touch.
#pragma once

#include <memory>

namespace rdma {

template <class T>
T& immortal() {
    alignas(T) static unsigned char storage[sizeof(T)];
    static T* obj = std::construct_at(reinterpret_cast<T*>(storage));
    return *obj;
}

}  // namespace rdma
