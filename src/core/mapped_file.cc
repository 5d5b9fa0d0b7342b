#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nxrt {

MappedFile::~MappedFile() {
  if (size_ > 0) munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release_resident_pages() const {
  if (size_ > 0) madvise(const_cast<char*>(data_), size_, MADV_DONTNEED);
}

Expected<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO (a hostile external data "file") must not wait for a writer;
  // it has no effect on regular files, and anything else is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const StatusCode code = err == ENOENT ? StatusCode::kNoSuchFile : StatusCode::kFail;
    return make_error(code, "cannot open '", path, "': ", std::strerror(err));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return make_error(StatusCode::kNoSuchFile, "'", path, "' is not a regular file");
  }
  const size_t size = size_t(info.st_size);
  const char* data = "";
  if (size > 0) {
    void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return make_error(StatusCode::kFail, "cannot map '", path, "': ", std::strerror(err));
    }
    data = static_cast<const char*>(mapped);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(data, size));
}

}  // namespace nxrt
