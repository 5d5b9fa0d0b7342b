/*
 * Turns per-frame speech probabilities into speech segments, the way Silero's own
 * VADIterator does: a segment starts at the first frame with p >= threshold (0.5) and
 * ends once p has stayed below threshold - 0.15 (0.35) for min_silence_ms (100 ms);
 * probabilities between the two thresholds keep the current state (hysteresis), so a
 * flickering score does not chop words apart. Segments shorter than min_speech_ms are
 * dropped, and each is padded by speech_pad_ms on both sides (never overlapping the
 * previous one, never past the audio).
 * Streaming: feed frames as they come, a segment is reported as soon as it has closed.
 * Header-only, C99 (and valid C++).
 */
#ifndef NXRT_EXAMPLES_VAD_SEGMENTER_H_
#define NXRT_EXAMPLES_VAD_SEGMENTER_H_

#include <stdint.h>

typedef struct vad_segment {
  int64_t start; /* first sample */
  int64_t end;   /* one past the last sample */
} vad_segment;

typedef struct vad_segmenter {
  float threshold;
  float neg_threshold;
  int64_t min_silence_samples;
  int64_t min_speech_samples;
  int64_t pad_samples;
  /* state */
  int triggered;
  int64_t speech_start;
  int64_t silence_start; /* -1 when no silence is pending */
  int64_t position;      /* samples consumed so far */
  int64_t last_end;      /* end of the last reported segment (after padding) */
} vad_segmenter;

static void vad_segmenter_init(vad_segmenter* s, int sample_rate) {
  s->threshold = 0.5f;
  s->neg_threshold = 0.35f;
  s->min_silence_samples = (int64_t)sample_rate * 100 / 1000;
  s->min_speech_samples = (int64_t)sample_rate * 250 / 1000;
  s->pad_samples = (int64_t)sample_rate * 30 / 1000;
  s->triggered = 0;
  s->speech_start = 0;
  s->silence_start = -1;
  s->position = 0;
  s->last_end = 0;
}

/* Closes the open segment at `end`; returns 1 when it is long enough to report. */
static int vad_segmenter_close(vad_segmenter* s, int64_t end, int64_t limit, vad_segment* out) {
  int64_t start = s->speech_start;
  s->triggered = 0;
  s->silence_start = -1;
  if (end - start < s->min_speech_samples) return 0;
  start -= s->pad_samples;
  end += s->pad_samples;
  if (start < s->last_end) start = s->last_end;
  if (end > limit) end = limit;
  s->last_end = end;
  out->start = start;
  out->end = end;
  return 1;
}

/* Consumes one frame of `frame_samples` samples with speech probability `prob`.
 * Returns 1 and fills *out when a segment has just ended (its padded end lies within
 * the audio fed so far, since min_silence exceeds the padding). */
static int vad_segmenter_push(vad_segmenter* s, float prob, int64_t frame_samples,
                              vad_segment* out) {
  const int64_t frame_start = s->position;
  s->position += frame_samples;
  if (prob >= s->threshold) {
    s->silence_start = -1;
    if (!s->triggered) {
      s->triggered = 1;
      s->speech_start = frame_start;
    }
    return 0;
  }
  if (s->triggered && prob < s->neg_threshold) {
    if (s->silence_start < 0) s->silence_start = frame_start;
    if (s->position - s->silence_start >= s->min_silence_samples)
      return vad_segmenter_close(s, s->silence_start, INT64_MAX, out);
  }
  return 0;
}

/* Ends the stream of `total_samples` samples: reports a segment still open. */
static int vad_segmenter_finish(vad_segmenter* s, int64_t total_samples, vad_segment* out) {
  if (!s->triggered) return 0;
  return vad_segmenter_close(s, s->silence_start >= 0 ? s->silence_start : s->position,
                             total_samples, out);
}

#endif /* NXRT_EXAMPLES_VAD_SEGMENTER_H_ */
