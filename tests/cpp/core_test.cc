#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/buffer_pool.h"
#include "core/half.h"
#include "core/large_buffers.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace nxrt {

TEST(Status, CarriesCodeAndContext) {
  Status s = invalid_argument("bad dim ", 3);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  Status c = std::move(s).with_context("[Conv] node 'c': ");
  EXPECT_EQ(c.message(), "[Conv] node 'c': bad dim 3");
  EXPECT_STREQ(status_code_name(StatusCode::kNoSuchFile), "NoSuchFile");
}

TEST(Expected, HoldsValueOrStatus) {
  Expected<int> v = 4;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 4);
  Expected<int> e = not_implemented("nope");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotImplemented);
}

TEST(Float16, RoundTripsAndRounds) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(float(Float16(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(float(Float16(1e6f))));
  EXPECT_TRUE(std::isnan(float(Float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float(Float16(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_EQ(float(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(BFloat16(3.0f)), 3.0f);
}

TEST(Shape, InlineAndHeapRanks) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.to_string(), "[2,3,4]");
  Shape big;
  for (int i = 0; i < 12; ++i) big.push_back(1);
  EXPECT_EQ(big.size(), 12u);
  Shape copy = big;
  EXPECT_EQ(copy, big);
  const int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(checked_numel(huge), -1);
  const int64_t negative[] = {2, -1};
  EXPECT_EQ(checked_numel(negative), -1);
}

TEST(Shape, MovesTakeTheDimsAndLeaveTheSourceEmpty) {
  Shape inline_dims{2, 3, 4};
  Shape moved(std::move(inline_dims));
  EXPECT_EQ(moved, (Shape{2, 3, 4}));
  EXPECT_TRUE(inline_dims.empty());  // NOLINT(bugprone-use-after-move): documented state
  Shape big;
  for (int i = 0; i < 12; ++i) big.push_back(i + 1);
  const int64_t* heap = big.data();
  Shape taken(std::move(big));
  EXPECT_EQ(taken.size(), 12u);
  EXPECT_EQ(taken.data(), heap);  // the heap array changed hands, no copy
  EXPECT_EQ(taken[11], 12);
  EXPECT_TRUE(big.empty());  // NOLINT(bugprone-use-after-move)
  // Assignment both ways between heap and inline ranks, and reuse of a moved-from shape.
  Shape target{7};
  target = std::move(taken);
  EXPECT_EQ(target.size(), 12u);
  target = Shape{5, 6};
  EXPECT_EQ(target, (Shape{5, 6}));
  target.push_back(7);
  EXPECT_EQ(target, (Shape{5, 6, 7}));
  big.push_back(9);
  EXPECT_EQ(big, Shape{9});
  Tensor t(DataType::kFloat, Shape{1, 2, 3}, nullptr);
  Tensor u = std::move(t);
  EXPECT_EQ(u.shape(), (Shape{1, 2, 3}));
}

TEST(Tensor, AllocateRejectsAbsurdSizes) {
  auto ok = Tensor::allocate(DataType::kFloat, Shape{4});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->nbytes(), 16u);
  auto bad = Tensor::allocate(DataType::kFloat, Shape{int64_t(1) << 40, 1024});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// Large owned tensors (graph outputs) reuse a freed buffer of about their size instead of
// mapping fresh pages each run; a much smaller request does not take a large buffer.
TEST(LargeBuffers, ReuseAFreedBufferOfAboutTheSize) {
  const size_t bytes = kLargeBufferMin * 3;
  auto first = Tensor::allocate_uninitialized(DataType::kFloat, Shape{int64_t(bytes / 4)});
  ASSERT_TRUE(first.ok());
  const void* storage = first->raw();
  first = Tensor::allocate_uninitialized(DataType::kFloat, Shape{1});  // frees the large one
  auto second = Tensor::allocate_uninitialized(DataType::kFloat, Shape{int64_t(bytes / 4) - 16});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->raw(), storage);
  second = Tensor::allocate_uninitialized(DataType::kFloat, Shape{1});
  size_t capacity = 0;
  void* small = acquire_large_buffer(kLargeBufferMin, &capacity);  // less than half the size
  EXPECT_NE(small, storage);
  EXPECT_EQ(capacity, kLargeBufferMin);
  release_large_buffer(small, capacity);
}

TEST(BufferPool, ReusesReleasedBlocks) {
  BufferPool pool;
  void* a = pool.acquire(1000);
  pool.release(a);
  void* b = pool.acquire(900);
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool.blocks_allocated(), 1u);
}

}  // namespace nxrt
