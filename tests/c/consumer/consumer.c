/* Loads a model through an installed libnxrt and prints its inputs. */
#include <nxrt/nxrt.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  nxrt_env* env = NULL;
  nxrt_session* s = NULL;
  if (nxrt_env_create(NXRT_API_VERSION, &env, NULL) != NXRT_OK ||
      nxrt_session_create_from_file(env, argv[1], NULL, &s, NULL) != NXRT_OK) {
    fprintf(stderr, "consumer: %s\n", nxrt_last_error_message());
    return 1;
  }
  printf("nxrt %s:", nxrt_get_version());
  for (size_t i = 0; i < nxrt_session_io_count(s, NXRT_IO_INPUT); ++i)
    printf(" %s", nxrt_session_io_name(s, NXRT_IO_INPUT, i));
  printf("\n");
  nxrt_session_destroy(s);
  nxrt_env_destroy(env);
  return 0;
}
