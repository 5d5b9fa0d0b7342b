/* Shared by the C tests: a whole file read into a malloc'd buffer. */
#ifndef NXRT_TESTS_C_READ_FILE_H
#define NXRT_TESTS_C_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes (free() them) and their count in *size; NULL when unreadable. */
static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* data = n >= 0 ? malloc(n > 0 ? (size_t)n : 1) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = data ? (size_t)n : 0;
  return data;
}

#endif
