/* kws_audio.h: the audio input of kws_app (host only: stdio), the zoo's WAV contract in C.
 *
 * What a file holds is decided by its content, not its name: a file that starts with RIFF/WAVE
 * is a WAV file, read as below; one that starts with another container's mark (another RIFF
 * type, RIFX, RF64, BW64, FORM, fLaC, OggS, ID3, riff, .snd), or whose name ends in .wav in any
 * case, is refused;
 * anything else is raw little-endian int16 mono samples at 16 kHz (an even, non-zero number of
 * bytes).
 *
 * WAV (the contract of zoo.training.data.wav, bit for bit):
 *   - chunks walked by their declared sizes (odd sizes padded to even); the first "fmt " and the
 *     first "data" are used, any other chunk (LIST, fact, cue ...) before or after is skipped;
 *   - fmt tag 1 (integer PCM: 8-bit unsigned, 16, 24, 32-bit signed), 3 (IEEE float, 32 or 64
 *     bits) or 0xFFFE (WAVE_FORMAT_EXTENSIBLE) with the PCM or IEEE float sub-format and valid
 *     bits = container bits; block align = channels * bits / 8; 1 to 8 channels; 16000 Hz;
 *   - a data chunk that runs past the end of the file, is not whole frames, or holds no frame
 *     is refused; so is a float sample that is NaN or infinite (checked before any output);
 *   - to int16: integer PCM v of b bits, v32 = v 2^(32-b), s = (v32 + 2^15) >> 16 (floor),
 *     clamped to int16; float x, s = floor(x 32768 + 0.5) in double, clamped; c channels mixed
 *     to floor((s_1 + ... + s_c + floor(c / 2)) / c).
 * Every refusal is one line on stderr that names the file, what was found and what is accepted. */
#ifndef KWS_AUDIO_H_
#define KWS_AUDIO_H_

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" { /* C linkage from C++ (an Arduino sketch, say) */
#endif

#define KWS_AUDIO_MAX_CHANNELS 8
#define KWS_AUDIO_SAMPLE_RATE 16000

typedef struct {
  FILE *f;
  const char *path;
  int format;        /* 0 raw int16, 1 integer PCM, 3 IEEE float */
  int channels;      /* of the file; the samples read are mono */
  int bytes;         /* per sample of one channel */
  long frames_left;  /* -1: a raw stream read to its end (a pipe: its size is not known) */
  long frame;        /* frames read so far */
  unsigned char head[12]; /* the first bytes, read to tell what the file is */
  int head_len, head_pos; /* a raw pipe: head[head_pos..head_len) are samples not yet read */
} kws_audio_t;

/* Opens `path` and checks it all (the header, the data's size, float samples finite): 1 with the
 * reader at the first sample, or 0 after one line on stderr. */
int kws_audio_open(kws_audio_t *a, const char *path);
/* Up to `max` (<= 256) mono int16 samples: how many (0 at the end), or -1 after one line on
 * stderr (a read error, or a pipe's odd last byte). */
int kws_audio_read(kws_audio_t *a, int16_t *out, int max);
void kws_audio_close(kws_audio_t *a);

#ifdef __cplusplus
}
#endif

#endif /* KWS_AUDIO_H_ */
