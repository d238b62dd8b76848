// The image engine: sharp (libvips) turns one source image into one output, with the pixel limit
// checked from the header before anything is decoded. Any failure of sharp is the input's fault
// (not an image, truncated, corrupt, too many pixels) and is final: BadInput.
import sharp from "sharp";
import { BadInput } from "./bad_input.ts";
import { type Action, convertedTo, type Format } from "./spec.ts";

// No operation cache (its memory would outlive the jobs); one libvips thread a job, so
// STORE_TRANSFORM_WORKERS bounds the cores transformations take from requests.
sharp.cache(false);
sharp.concurrency(1);

/** Formats read as sources: the raster formats of the web and cameras (no SVG, PDF or RAW). */
const INPUT_FORMATS = new Set(["jpeg", "png", "webp", "gif", "tiff", "heif", "avif"]);

const CONTENT_TYPES: Record<Format, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  avif: "image/avif",
};

/** The first line of sharp's message (libvips repeats its warnings below it). */
function reason(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0];
}

function tooManyPixels(maxPixels: number, pixels?: number): BadInput {
  const count = pixels === undefined ? "more pixels" : `${pixels} pixels, more`;
  return new BadInput(
    `the image has ${count} than STORE_TRANSFORM_MAX_PIXELS allows (${maxPixels})`,
  );
}

/** The output format when no convert action names one. */
function sameFormat(format: string, compression: string | undefined): Format {
  if (format === "heif") return compression === "av1" ? "avif" : "jpeg";
  return (["jpeg", "png", "webp"] as string[]).includes(format) ? format as Format : "png";
}

export interface Rendered {
  bytes: Uint8Array;
  contentType: string;
}

/** Applies `actions` in order to the image in `input`; orientation is applied first. */
export async function render(
  input: Uint8Array,
  actions: Action[],
  maxPixels: number,
): Promise<Rendered> {
  const options = { limitInputPixels: maxPixels, failOn: "warning" as const };
  let info;
  try {
    info = await sharp(input, options).metadata();
  } catch (err) {
    if (/pixel limit/.test(reason(err))) throw tooManyPixels(maxPixels);
    throw new BadInput(`not a readable image: ${reason(err)}`);
  }
  if (!INPUT_FORMATS.has(info.format ?? "")) {
    throw new BadInput(`not a supported image format: ${info.format ?? "unknown"}`);
  }
  const pixels = (info.width ?? 0) * (info.height ?? 0) * (info.pages ?? 1);
  if (pixels > maxPixels) throw tooManyPixels(maxPixels, pixels);
  const strip = actions.some((a) => "strip_metadata" in a);
  // Rotating by the EXIF orientation first: thumbnails fit the upright image, and stripping the
  // orientation tag afterwards leaves the picture the right way up.
  let image = sharp(input, options).autoOrient();
  // sharp writes no metadata unless asked: EXIF, GPS, XMP, IPTC and ICC go unless kept.
  if (!strip) image = image.keepMetadata();
  for (const action of actions) {
    if ("thumbnail" in action) {
      const { width, height, fit } = action.thumbnail;
      image = image.resize({ width, height, fit, withoutEnlargement: true });
    }
  }
  const format = convertedTo(actions) ?? sameFormat(info.format!, info.compression);
  const quality = actions.find((a) => "convert" in a) as
    | { convert: { quality?: number } }
    | undefined;
  const q = quality?.convert.quality;
  image = image.toFormat(format, q !== undefined && format !== "png" ? { quality: q } : {});
  try {
    const bytes = await image.toBuffer();
    return {
      bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      contentType: CONTENT_TYPES[format],
    };
  } catch (err) {
    throw new BadInput(`the image cannot be decoded: ${reason(err)}`);
  }
}
