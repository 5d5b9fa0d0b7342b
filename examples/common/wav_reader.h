/*
 * A small, strict WAV reader for the streaming examples: RIFF/WAVE files holding 16 kHz
 * mono 16-bit PCM (format tag 1, or WAVE_FORMAT_EXTENSIBLE with the PCM sub-format).
 * Chunks are walked one by one, so LIST/fact/cue chunks anywhere are skipped; anything
 * that is not the expected format is refused with a message saying what the file holds.
 * Header-only, C99 (and valid C++).
 */
#ifndef NXRT_EXAMPLES_WAV_READER_H_
#define NXRT_EXAMPLES_WAV_READER_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wav_audio {
  int16_t* samples; /* malloc'ed; free with wav_audio_free */
  size_t count;
  uint32_t sample_rate;
} wav_audio;

static uint32_t wav_le32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t wav_le16(const unsigned char* p) { return (uint16_t)(p[0] | p[1] << 8); }

static void wav_audio_free(wav_audio* audio) {
  free(audio->samples);
  audio->samples = NULL;
  audio->count = 0;
}

/* Reads `path` into `audio`. Returns 0 on success; otherwise writes a message into
 * `err` (of `err_size` bytes) and returns -1. */
static int wav_read_pcm16_mono(const char* path, uint32_t want_rate, wav_audio* audio, char* err,
                               size_t err_size) {
  FILE* f = fopen(path, "rb");
  unsigned char head[12];
  unsigned char chunk[8];
  unsigned char fmt[40];
  int have_fmt = 0;
  long file_size;
  memset(audio, 0, sizeof(*audio));
  if (!f) {
    snprintf(err, err_size, "cannot open '%s'", path);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  file_size = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (fread(head, 1, 12, f) != 12 || memcmp(head, "RIFF", 4) != 0 ||
      memcmp(head + 8, "WAVE", 4) != 0) {
    snprintf(err, err_size, "'%s' is not a RIFF/WAVE file", path);
    fclose(f);
    return -1;
  }
  for (;;) {
    long pos = ftell(f);
    uint32_t size;
    if (fread(chunk, 1, 8, f) != 8) {
      snprintf(err, err_size, "'%s' has no data chunk", path);
      break;
    }
    size = wav_le32(chunk + 4);
    if (memcmp(chunk, "fmt ", 4) == 0) {
      uint16_t tag, channels, bits;
      uint32_t rate;
      size_t n = size < sizeof(fmt) ? size : sizeof(fmt);
      if (size < 16 || fread(fmt, 1, n, f) != n) {
        snprintf(err, err_size, "'%s' has a truncated fmt chunk", path);
        break;
      }
      tag = wav_le16(fmt);
      channels = wav_le16(fmt + 2);
      rate = wav_le32(fmt + 4);
      bits = wav_le16(fmt + 14);
      /* WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID. */
      if (tag == 0xFFFE && n >= 26) tag = wav_le16(fmt + 24);
      if (tag != 1) {
        snprintf(err, err_size,
                 "'%s' is not PCM (format tag %u); convert it with: sox IN -e signed -b 16 OUT.wav",
                 path, (unsigned)tag);
        break;
      }
      if (channels != 1 || bits != 16 || rate != want_rate) {
        snprintf(err, err_size,
                 "'%s' holds %u Hz, %u channel(s), %u-bit audio; expected %u Hz mono 16-bit "
                 "(convert with: sox IN -r %u -c 1 -b 16 OUT.wav)",
                 path, (unsigned)rate, (unsigned)channels, (unsigned)bits, (unsigned)want_rate,
                 (unsigned)want_rate);
        break;
      }
      have_fmt = 1;
    } else if (memcmp(chunk, "data", 4) == 0) {
      long available = file_size - (pos + 8);
      size_t bytes = size;
      if (!have_fmt) {
        snprintf(err, err_size, "'%s' has its data chunk before the fmt chunk", path);
        break;
      }
      /* Streaming writers leave the size at 0 or 0xFFFFFFFF: take what the file holds. */
      if (size == 0 || size == 0xFFFFFFFFu || (long)size > available) bytes = (size_t)available;
      bytes &= ~(size_t)1;
      audio->count = bytes / 2;
      audio->sample_rate = want_rate;
      audio->samples = (int16_t*)malloc(bytes ? bytes : 2);
      if (!audio->samples || fread(audio->samples, 1, bytes, f) != bytes) {
        snprintf(err, err_size, "cannot read the samples of '%s'", path);
        wav_audio_free(audio);
        break;
      }
      { /* WAV is little endian; swap on big-endian hosts. */
        const uint16_t probe = 1;
        if (*(const unsigned char*)&probe == 0) {
          size_t i;
          for (i = 0; i < audio->count; ++i) {
            uint16_t v = (uint16_t)audio->samples[i];
            audio->samples[i] = (int16_t)(uint16_t)(v >> 8 | v << 8);
          }
        }
      }
      fclose(f);
      return 0;
    }
    /* Chunks are padded to an even size. */
    if (fseek(f, pos + 8 + (long)size + (long)(size & 1), SEEK_SET) != 0) {
      snprintf(err, err_size, "'%s' is truncated", path);
      break;
    }
  }
  fclose(f);
  return -1;
}

#endif /* NXRT_EXAMPLES_WAV_READER_H_ */
