// Read-only memory map of a whole file; initializers point into it without copying.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

namespace nxrt {

class MappedFile {
 public:
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Errors: kNoSuchFile when missing or not a regular file, kFail when unreadable.
  static Expected<std::shared_ptr<MappedFile>> open(const std::string& path);

  const char* data() const { return data_; }
  size_t size() const { return size_; }

  // Drops the mapping's resident pages (they are clean copies of the file): a session
  // calls this once planning has packed or copied what it needs, so weights it never
  // reads again stop counting against the process. Pages read later fault back in from
  // the page cache, so this is safe at any time.
  void release_resident_pages() const;

 private:
  MappedFile(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_;
  size_t size_;
};

}  // namespace nxrt
