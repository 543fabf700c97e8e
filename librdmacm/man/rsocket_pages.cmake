# rsockets and the preload library (section 7).
rdma_man_pages(rsocket.7.md)
