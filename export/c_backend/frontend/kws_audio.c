/* kws_audio.c: raw int16 and WAV input for kws_app (see kws_audio.h for the contract). */
#include "kws_audio.h"

#include <errno.h>
#include <string.h>

#define KWS_AUDIO_MAX_READ 256

/* A WAVE_FORMAT_EXTENSIBLE SubFormat GUID: the format tag (2 bytes), 0x0000, then these 12 bytes
 * (KSDATAFORMAT_SUBTYPE_PCM is 00000001-0000-0010-8000-00aa00389b71, IEEE_FLOAT the same with 3). */
static const unsigned char kGuidTail[12] = {0x00, 0x00, 0x10, 0x00, 0x80, 0x00,
                                            0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

static uint32_t le16(const unsigned char *b) { return b[0] | (uint32_t)b[1] << 8; }
static uint32_t le32(const unsigned char *b) { return le16(b) | le16(b + 2) << 16; }

static int refuse(kws_audio_t *a, const char *what) {
  fprintf(stderr, "%s: %s\n", a->path, what);
  return 0;
}

/* The name ends in .wav, in any case. */
static int named_wav(const char *path) {
  const size_t n = strlen(path);
  const char *s = path + n - 4;
  return n > 4 && s[0] == '.' && (s[1] | 32) == 'w' && (s[2] | 32) == 'a' && (s[3] | 32) == 'v';
}

/* The container a file starting with `b` (4 bytes) is, when it is one the app refuses. */
static const char *other_container(const unsigned char *b) {
  static const char *const marks[][2] = {
      {"RIFX", "big-endian RIFF (RIFX)"}, {"RF64", "RF64"}, {"BW64", "BW64"},
      {"FORM", "AIFF (FORM)"}, {"fLaC", "FLAC"}, {"OggS", "Ogg"}, {"ID3", "MP3 (ID3)"},
      {"riff", "Sony Wave64 (riff)"}, {".snd", "Sun/NeXT AU (.snd)"}};
  size_t i;
  for (i = 0; i < sizeof(marks) / sizeof(marks[0]); ++i) {
    if (memcmp(b, marks[i][0], strlen(marks[i][0])) == 0) return marks[i][1];
  }
  return NULL;
}

/* The file's size in bytes, or -1 when it cannot be seeked (a pipe). */
static long file_size(FILE *f) {
  long size;
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) return -1;
  return size;
}

static int open_raw(kws_audio_t *a, long size, int got) {
  char line[160];
  a->format = 0, a->channels = 1, a->bytes = 2;
  if (size < 0) { /* a pipe: the bytes sniffed so far are samples */
    a->frames_left = -1;
    a->head_len = got;
    return 1;
  }
  if (size == 0) return refuse(a, "an empty file: no samples");
  if (size % 2) {
    sprintf(line, "%ld bytes is not a whole number of raw int16 samples (2 bytes each)", size);
    return refuse(a, line);
  }
  a->frames_left = size / 2;
  return fseek(a->f, 0, SEEK_SET) == 0 || refuse(a, "cannot seek back to the first sample");
}

/* Checks a fmt chunk's body (n bytes): the accepted formats only, in the order of
 * zoo.training.data.wav. Sets format, channels, bytes. */
static int check_fmt(kws_audio_t *a, const unsigned char *fmt, uint32_t n) {
  char line[200];
  unsigned tag = le16(fmt), bits = le16(fmt + 14);
  const unsigned channels = le16(fmt + 2), align = le16(fmt + 12);
  if (n < 16) return refuse(a, "a fmt chunk shorter than 16 bytes");
  if (tag == 0xFFFE) {
    if (n < 40) return refuse(a, "a WAVE_FORMAT_EXTENSIBLE fmt chunk shorter than 40 bytes");
    if (le16(fmt + 26) != 0 || memcmp(fmt + 28, kGuidTail, 12) != 0 ||
        (le16(fmt + 24) != 1 && le16(fmt + 24) != 3))
      return refuse(a, "WAVE_FORMAT_EXTENSIBLE with a SubFormat other than PCM or IEEE float; "
                       "accepted: those two");
    if (le16(fmt + 18) != bits) {
      sprintf(line, "WAVE_FORMAT_EXTENSIBLE with %u valid bits in %u-bit containers; accepted: "
              "valid bits = container bits", (unsigned)le16(fmt + 18), bits);
      return refuse(a, line);
    }
    tag = le16(fmt + 24);
  }
  if (tag != 1 && tag != 3) {
    const char *name = tag == 6 ? " (A-law)" : tag == 7 ? " (mu-law)" :
                       (tag == 2 || tag == 0x11) ? " (ADPCM)" : "";
    sprintf(line, "format tag 0x%04x%s is not accepted; accepted: 1 (integer PCM), 3 (IEEE "
            "float), 0xfffe (WAVE_FORMAT_EXTENSIBLE) of those", tag, name);
    return refuse(a, line);
  }
  if (tag == 1 ? (bits != 8 && bits != 16 && bits != 24 && bits != 32)
               : (bits != 32 && bits != 64)) {
    sprintf(line, "%u-bit %s; accepted: %s", bits, tag == 1 ? "integer PCM" : "IEEE float",
            tag == 1 ? "8, 16, 24 or 32 bits" : "32 or 64 bits");
    return refuse(a, line);
  }
  if (channels < 1 || channels > KWS_AUDIO_MAX_CHANNELS) {
    sprintf(line, "%u channels; accepted: 1 to %d", channels, KWS_AUDIO_MAX_CHANNELS);
    return refuse(a, line);
  }
  if (align != channels * bits / 8) {
    sprintf(line, "block align %u, but %u channel(s) of %u bits make %u", align, channels, bits,
            channels * bits / 8);
    return refuse(a, line);
  }
  a->format = (int)tag, a->channels = (int)channels, a->bytes = (int)bits / 8;
  return 1;
}

/* Walks the chunks after "RIFF" size "WAVE" by their declared sizes: the first fmt chunk's
 * first 40 bytes into fmt (*fmt_size: its declared size), the first data chunk's offset and
 * declared size; *data_at stays -1 without one. */
static int walk_chunks(kws_audio_t *a, long size, unsigned char fmt[40], uint32_t *fmt_size,
                       long *data_at, uint32_t *data_size) {
  long pos = 12;
  int have_fmt = 0;
  unsigned char c[8];
  char line[200];
  while ((!have_fmt || *data_at < 0) && pos + 8 <= size) {
    uint32_t n;
    if (fseek(a->f, pos, SEEK_SET) != 0 || fread(c, 1, 8, a->f) != 8)
      return refuse(a, "cannot read the chunk headers");
    n = le32(c + 4);
    if (!have_fmt && memcmp(c, "fmt ", 4) == 0) {
      const size_t want = n < 40 ? n : 40;
      if ((long)n > size - pos - 8) {
        sprintf(line, "truncated header: the fmt chunk says %lu bytes, the file holds %ld",
                (unsigned long)n, size - pos - 8);
        return refuse(a, line);
      }
      if (fread(fmt, 1, want, a->f) != want) return refuse(a, "cannot read the fmt chunk");
      *fmt_size = n, have_fmt = 1;
    } else if (*data_at < 0 && memcmp(c, "data", 4) == 0) {
      *data_at = pos + 8, *data_size = n;
    }
    pos += 8 + (long)n + (long)(n & 1);
  }
  if (*data_at >= 0 && (long)*data_size > size - *data_at) {
    sprintf(line, "truncated: header says %lu bytes of samples, the file holds %ld",
            (unsigned long)*data_size, size - *data_at);
    return refuse(a, line);
  }
  if (!have_fmt) return refuse(a, "no fmt chunk (walked by the chunks' declared sizes)");
  if (*data_at < 0) return refuse(a, "no data chunk (walked by the chunks' declared sizes)");
  return 1;
}

/* The WAV file's header: the reader at the first sample of its data chunk. */
static int open_wav(kws_audio_t *a, long size) {
  unsigned char fmt[40] = {0};
  uint32_t fmt_size = 0, data_size = 0;
  long data_at = -1, frame_bytes;
  unsigned long rate;
  char line[200];
  if (size < 0) return refuse(a, "a WAV file must be a file the app can seek in, not a pipe");
  if (!walk_chunks(a, size, fmt, &fmt_size, &data_at, &data_size)) return 0;
  if (!check_fmt(a, fmt, fmt_size)) return 0;
  frame_bytes = (long)a->channels * a->bytes;
  if (data_size % frame_bytes) {
    sprintf(line, "a data chunk of %lu bytes is not a whole number of %ld-byte frames",
            (unsigned long)data_size, frame_bytes);
    return refuse(a, line);
  }
  if (data_size == 0) return refuse(a, "no samples (the data chunk holds 0 frames)");
  rate = le32(fmt + 4);
  if (rate != KWS_AUDIO_SAMPLE_RATE) {
    sprintf(line, "found %lu Hz, expected %d Hz (kws_app does not resample: its front end and "
            "model take 16 kHz)", rate, KWS_AUDIO_SAMPLE_RATE);
    return refuse(a, line);
  }
  a->frames_left = (long)(data_size / frame_bytes);
  return fseek(a->f, data_at, SEEK_SET) == 0 || refuse(a, "cannot seek to the data chunk");
}

static int16_t clamp16(int64_t v) {
  return (int16_t)(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
}

/* Sample ch of frame p (a->bytes per sample, little-endian) as a float: 1 when finite. */
static int float_sample(const kws_audio_t *a, const unsigned char *p, double *x) {
  if (a->bytes == 4) {
    const uint32_t bits = le32(p);
    float f;
    memcpy(&f, &bits, 4);
    *x = f;
  } else {
    const uint64_t bits = le32(p) | (uint64_t)le32(p + 4) << 32;
    memcpy(x, &bits, 8);
  }
  return *x - *x == 0.0; /* NaN - NaN and inf - inf are NaN */
}

/* One sample as int16 (the contract's rounding). */
static int32_t to_int16(const kws_audio_t *a, const unsigned char *p) {
  int64_t v32;
  int i;
  if (a->format == 3) {
    double x, d;
    int64_t t;
    float_sample(a, p, &x);
    d = x * 32768.0 + 0.5;
    if (d >= 32767.0) return 32767;
    if (d < -32768.0) return -32768;
    t = (int64_t)d; /* toward zero; floor below */
    return (int32_t)(t - ((double)t > d));
  }
  if (a->bytes == 1) return ((int32_t)p[0] - 128) * 256;
  v32 = 0;
  for (i = 0; i < a->bytes; ++i) v32 |= (int64_t)p[i] << (8 * (4 - a->bytes + i));
  if (v32 >= ((int64_t)1 << 31)) v32 -= (int64_t)1 << 32; /* two's complement, 32 bits */
  /* floor((v32 + 2^15) / 2^16) with a non-negative operand: no shift of a negative value */
  return clamp16(((v32 + 32768 + ((int64_t)1 << 47)) >> 16) - ((int64_t)1 << 31));
}

/* Float data: every sample finite, checked before the first hop is printed. */
static int check_finite(kws_audio_t *a) {
  unsigned char buf[KWS_AUDIO_MAX_CHANNELS * 8 * 64];
  const long frame_bytes = (long)a->channels * a->bytes, start = ftell(a->f);
  long frame = 0, left = a->frames_left;
  char line[200];
  while (left > 0) {
    const long n = left < 64 ? left : 64;
    long i;
    if (fread(buf, (size_t)frame_bytes, (size_t)n, a->f) != (size_t)n)
      return refuse(a, "cannot read the samples");
    for (i = 0; i < n * a->channels; ++i) {
      double x;
      if (!float_sample(a, buf + i * a->bytes, &x)) {
        sprintf(line, "frame %ld (channel %ld) is %s; float samples must be finite",
                frame + i / a->channels, i % a->channels, x != x ? "nan" : x > 0 ? "inf" : "-inf");
        return refuse(a, line);
      }
    }
    frame += n, left -= n;
  }
  return fseek(a->f, start, SEEK_SET) == 0 || refuse(a, "cannot seek back to the first sample");
}

int kws_audio_open(kws_audio_t *a, const char *path) {
  long size;
  int got;
  char line[200];
  memset(a, 0, sizeof(*a));
  a->path = path;
  errno = 0;
  if (!(a->f = fopen(path, "rb"))) {
    sprintf(line, "cannot be read (%s)", strerror(errno));
    return refuse(a, line);
  }
  got = (int)fread(a->head, 1, 12, a->f);
  if (ferror(a->f)) {
#ifdef EISDIR
    if (errno == EISDIR) return refuse(a, "a folder, not an audio file");
#endif
    sprintf(line, "cannot be read (%s)", strerror(errno));
    return refuse(a, line);
  }
  size = file_size(a->f);
  if (got == 12 && memcmp(a->head, "RIFF", 4) == 0 && memcmp(a->head + 8, "WAVE", 4) == 0) {
    if (!open_wav(a, size)) return 0;
    return a->format != 3 || check_finite(a);
  }
  if (got >= 4 && memcmp(a->head, "RIFF", 4) == 0) {
    return refuse(a, "a RIFF file that is not RIFF/WAVE; accepted: RIFF/WAVE, or raw 16 kHz "
                     "int16 samples");
  }
  if (got >= 4 && other_container(a->head)) {
    sprintf(line, "%s, not RIFF/WAVE; accepted: RIFF/WAVE, or raw 16 kHz int16 samples",
            other_container(a->head));
    return refuse(a, line);
  }
  if (named_wav(path)) {
    return refuse(a, got ? "named .wav but not a RIFF/WAVE file (no RIFF/WAVE header); raw "
                           "int16 samples need a name that does not end in .wav"
                         : "an empty file: no samples");
  }
  return open_raw(a, size, got);
}

/* The next frame's bytes: from head[] first (a raw pipe), then from the file. */
static size_t read_bytes(kws_audio_t *a, unsigned char *buf, size_t n) {
  const size_t left = (size_t)(a->head_len - a->head_pos);
  const size_t from_head = left < n ? left : n;
  memcpy(buf, a->head + a->head_pos, from_head);
  a->head_pos += (int)from_head;
  return from_head + fread(buf + from_head, 1, n - from_head, a->f);
}

int kws_audio_read(kws_audio_t *a, int16_t *out, int max) {
  unsigned char buf[KWS_AUDIO_MAX_READ * KWS_AUDIO_MAX_CHANNELS * 8];
  const size_t frame_bytes = (size_t)a->channels * (size_t)a->bytes;
  size_t want = max < KWS_AUDIO_MAX_READ ? (size_t)max : KWS_AUDIO_MAX_READ, got, i;
  if (a->frames_left >= 0 && (long)want > a->frames_left) want = (size_t)a->frames_left;
  got = read_bytes(a, buf, want * frame_bytes);
  if (ferror(a->f) || (a->frames_left >= 0 && got != want * frame_bytes) || got % frame_bytes) {
    fprintf(stderr, "%s: %s\n", a->path, got % frame_bytes ? "an odd last byte: not whole raw "
            "int16 samples" : "cannot read the samples");
    return -1;
  }
  for (i = 0; i < got / frame_bytes; ++i) {
    const int c = a->channels;
    int64_t sum = c / 2, q;
    int k;
    for (k = 0; k < c; ++k) sum += to_int16(a, buf + i * frame_bytes + (size_t)k * a->bytes);
    q = sum / c;
    out[i] = (int16_t)(q - (sum % c != 0 && sum < 0)); /* floor division */
  }
  if (a->frames_left >= 0) a->frames_left -= (long)(got / frame_bytes);
  a->frame += (long)(got / frame_bytes);
  return (int)(got / frame_bytes);
}

void kws_audio_close(kws_audio_t *a) {
  if (a->f) fclose(a->f);
  a->f = NULL;
}
