// Per-CTA copy rate of NCCL's Simple reduceCopy on one H200 (experiments/validation/cta_copy/README.md).
// The kernel reproduces NCCL 2.28.9 src/device/common_kernel.h reduceCopyPacks for the ring's local ops:
// each warp consumes hunks of Unroll x 32 threads x 16 B; per hunk it issues Unroll ld.volatile.global of
// 16 B from source 0, then Unroll from source 1, adds them as bf16x2 (__hadd2, reduce_kernel.h on sm_80+),
// then issues Unroll st.global of 16 B to the destination. 512 worker threads per CTA
// (NCCL_SIMPLE_MAX_NTHREADS), Unroll = ncclCollUnroll() = 8 on sm_90. Each CTA works on its own
// contiguous range, as a channel does. Timed with CUDA events; the empty-kernel time is subtracted.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

constexpr int UNROLL = 8;
constexpr int NT = 512;

__device__ __forceinline__ uint4 ldv(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void stg(uint4* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ uint32_t add2(uint32_t a, uint32_t b) {
  __nv_bfloat162 x = *reinterpret_cast<__nv_bfloat162*>(&a), y = *reinterpret_cast<__nv_bfloat162*>(&b);
  __nv_bfloat162 z = __hadd2(x, y);
  return *reinterpret_cast<uint32_t*>(&z);
}

// nsrc = 1 (copy) or 2 (reduce-copy); per_cta_B: bytes of output per CTA (multiple of 16 warps x 4 KiB)
__global__ void reduce_copy(const uint4* __restrict__ s0, const uint4* __restrict__ s1, uint4* __restrict__ d,
                            size_t per_cta_B, int nsrc) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = NT / 32;
  const size_t base = blockIdx.x * (per_cta_B / 16);
  const size_t hunk = UNROLL * 32;  // packs per hunk
  const size_t nh = per_cta_B / 16 / hunk;
  for (size_t h = warp; h < nh; h += nwarps) {
    size_t o = base + h * hunk + lane;
    uint4 a[UNROLL], b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) a[u] = ldv(s0 + o + u * 32);
    if (nsrc == 2) {
#pragma unroll
      for (int u = 0; u < UNROLL; u++) b[u] = ldv(s1 + o + u * 32);
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        a[u].x = add2(a[u].x, b[u].x); a[u].y = add2(a[u].y, b[u].y);
        a[u].z = add2(a[u].z, b[u].z); a[u].w = add2(a[u].w, b[u].w);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) stg(d + o + u * 32, a[u]);
  }
}
__global__ void empty() {}
__global__ void scrub(uint4* p, size_t n) {  // write a large buffer: evicts the L2
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = make_uint4(i, 1, 2, 3);
}

int main(int argc, char** argv) {
  const size_t scrubB = 512ull << 20;
  const size_t maxB = 96ull << 20;  // per buffer
  uint4 *s0, *s1, *d, *sc;
  CK(cudaMalloc(&s0, maxB)); CK(cudaMalloc(&s1, maxB)); CK(cudaMalloc(&d, maxB)); CK(cudaMalloc(&sc, scrubB));
  CK(cudaMemset(s0, 1, maxB)); CK(cudaMemset(s1, 2, maxB)); CK(cudaMemset(d, 0, maxB));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto timeit = [&](auto launch) { CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                                   float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); return ms * 1000.0; };
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const int REP = 15;
  std::vector<double> ev;
  for (int r = 0; r < 50; r++) ev.push_back(timeit([&] { empty<<<24, NT>>>(); }));
  double t_empty = med(ev);
  printf("{\"empty_kernel_us\": %.3f, \"rows\": [\n", t_empty);
  int ctas_list[] = {1, 24};
  size_t per_list[] = {32u << 10, 64u << 10, 256u << 10, 1u << 20, 2u << 20};
  bool first = true;
  for (int nsrc = 1; nsrc <= 2; nsrc++)
    for (int ctas : ctas_list)
      for (size_t per : per_list) {
        std::vector<double> cold, warm;
        for (int r = 0; r < REP; r++) {
          scrub<<<264, 1024>>>(sc, scrubB / 16);
          CK(cudaDeviceSynchronize());
          cold.push_back(timeit([&] { reduce_copy<<<ctas, NT>>>(s0, s1, d, per, nsrc); }));
          warm.push_back(timeit([&] { reduce_copy<<<ctas, NT>>>(s0, s1, d, per, nsrc); }));
        }
        double tc = med(cold) - t_empty, tw = med(warm) - t_empty;
        printf("%s{\"nsrc\": %d, \"ctas\": %d, \"per_cta_KiB\": %zu, \"cold_us\": %.3f, \"warm_us\": %.3f, "
               "\"cold_GBps_per_cta\": %.2f, \"warm_GBps_per_cta\": %.2f}\n", first ? "" : ",", nsrc, ctas, per >> 10,
               tc, tw, per / tc / 1e3, per / tw / 1e3);
        first = false;
      }
  printf("]}\n");
  return 0;
}
