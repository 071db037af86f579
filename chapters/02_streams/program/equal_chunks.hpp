// Chapter 02 — the chapter's pipeline (copy in, AddKernel, copy out) issued by the program
// itself in equal chunks, depth-first, in one of three stream layouts. Equal chunks are
// what the pipeline formula assumes (--mode=chunks), and the layouts are the CUDA Handbook's
// remark that the chunks' kernels may share one stream (--mode=kernel-stream), measured
// whatever the learner's run_staged does. It runs on the learner's buffers: with pageable
// ones (step 1 not done) every copy is synchronous and nothing overlaps. Program only.
#pragma once

#include "streams.cuh"

#include "cml/stream.hpp"

#include <cstddef>
#include <vector>

namespace ch02 {

enum class Layout {
  ChunkStreams,   // chunk c's copy in, kernel and copy out on stream c % 8: the handbook's layout
  KernelStream,   // copies as above, every chunk's kernel on one stream: events order each chunk
  EngineStreams,  // one stream per engine: copies in, kernels, copies out; events between them
};

struct LayoutInfo {
  Layout layout;
  const char* name;  // for the table and the timeline's file name
  const char* what;
};

// The three layouts, each written once.
const std::vector<LayoutInfo>& layouts();

class EqualChunks {
 public:
  // Copies of chunk c go to the c % kChunkStreams'th stream: 8 were as good as 32 for the
  // chapter's plans (docs/02_streams.md), and a chunk of its own stream up to 8 chunks.
  static constexpr std::size_t kChunkStreams = 8;

  EqualChunks();

  // Enqueues p over `chunks` equal chunks ([n c / C, n (c + 1) / C); an empty chunk issues
  // nothing), chunk by chunk, in `layout`. Only enqueues; cudaStreamWaitEvent makes a
  // stream, never the host, wait.
  void issue(const Problem& p, std::size_t chunks, Layout layout);

 private:
  // Events that order the three operations of chunk c across streams: recorded after its
  // copy in and after its kernel. Grown to the chunk count on first use, never in a
  // timed run (each mode checks the result before it times).
  void reserve_events(std::size_t chunks);

  std::vector<cml::Stream> chunk_streams_;
  cml::Stream copies_in_, kernels_, copies_out_;
  std::vector<cml::Event> copied_in_, computed_;
};

// Says so, once, when p's host buffers are pageable: the copies are then synchronous, so the
// measurements that follow show no overlap (allocate_host_ints, step 1).
void note_if_pageable(const Problem& p);

}  // namespace ch02
