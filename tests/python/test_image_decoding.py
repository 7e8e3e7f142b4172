"""feeder.decode_image against PIL, for every kind of JPEG, PNG and WebP, made here by PIL; and bad images."""

import io

import numpy as np
import pytest
from PIL import Image

import feeder


def picture(width=37, height=23, seed=0):
    """A smooth RGB picture with some noise (JPEG-like content), odd sizes to catch stride bugs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) * 127 // (width + height)], axis=-1)
    return np.clip(base + rng.integers(-20, 21, size=base.shape), 0, 255).astype(np.uint8)


def encode(image, format, **options):
    out = io.BytesIO()
    image.save(out, format=format, **options)
    return out.getvalue()


def pil_rgb(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def pil_gray(data):
    image = Image.open(io.BytesIO(data))
    if image.format == "JPEG":
        image.draft("L", image.size)  # a color JPEG's luma plane, as libjpeg decodes it
    return np.asarray(image.convert("L"))


def jpegs():
    rgb = Image.fromarray(picture())
    return {
        "baseline RGB 4:2:0": encode(rgb, "JPEG", quality=90),
        "baseline RGB 4:4:4": encode(rgb, "JPEG", quality=95, subsampling=0),
        "baseline RGB 4:2:2": encode(rgb, "JPEG", quality=75, subsampling=1),
        "progressive RGB": encode(rgb, "JPEG", quality=85, progressive=True),
        "grayscale": encode(rgb.convert("L"), "JPEG", quality=90),
        "progressive grayscale": encode(rgb.convert("L"), "JPEG", quality=90, progressive=True),
        "CMYK (Adobe)": encode(rgb.convert("CMYK"), "JPEG", quality=90),
        "restart intervals, optimised": encode(rgb, "JPEG", quality=80, optimize=True),
    }


def pngs():
    rgb = picture()
    image = Image.fromarray(rgb)
    rgba = np.dstack([rgb, np.arange(rgb.shape[0] * rgb.shape[1], dtype=np.uint8).reshape(rgb.shape[:2])])
    palette = image.convert("P", palette=Image.ADAPTIVE, colors=50)
    palette_alpha = image.convert("P", palette=Image.ADAPTIVE, colors=16)
    palette_alpha.info["transparency"] = 3
    return {
        "RGB": encode(image, "PNG"),
        "RGBA": encode(Image.fromarray(rgba), "PNG"),
        "gray": encode(image.convert("L"), "PNG"),
        "gray + alpha": encode(image.convert("LA"), "PNG"),
        "1-bit": encode(image.convert("1"), "PNG"),
        "palette": encode(palette, "PNG"),
        "palette with transparency": encode(palette_alpha, "PNG", transparency=3),
        "RGB, optimised": encode(image, "PNG", optimize=True),
    }


@pytest.mark.parametrize("kind", sorted(jpegs()))
def test_jpeg_equals_pil(kind):
    data = jpegs()[kind]
    assert np.array_equal(feeder.decode_image(data, 3), pil_rgb(data)), kind
    assert np.array_equal(feeder.decode_image(data, 1)[..., 0], pil_gray(data)), kind


@pytest.mark.parametrize("kind", sorted(pngs()))
def test_png_equals_pil(kind):
    data = pngs()[kind]
    assert np.array_equal(feeder.decode_image(data, 3), pil_rgb(data)), kind
    assert np.array_equal(feeder.decode_image(data, 1)[..., 0], pil_gray(data)), kind


def test_sixteen_bit_png_keeps_the_high_byte():
    rng = np.random.default_rng(2)
    deep = rng.integers(0, 65536, size=(9, 11), dtype=np.uint16)
    data = encode(Image.fromarray(deep), "PNG")  # PIL writes mode I;16 as 16-bit gray
    assert Image.open(io.BytesIO(data)).mode.startswith("I")
    # PIL's own convert("L") of a 16-bit image clips instead of scaling; the high byte is the scaled value.
    assert np.array_equal(feeder.decode_image(data, 1)[..., 0], (deep >> 8).astype(np.uint8))
    assert np.array_equal(feeder.decode_image(data, 3), np.repeat((deep >> 8).astype(np.uint8)[..., None], 3, axis=2))


def test_sixteen_bit_rgb_png():
    # PIL does not write one: built by hand.
    import struct
    import zlib
    rng = np.random.default_rng(4)
    deep = rng.integers(0, 65536, size=(5, 7, 3), dtype=np.uint16)
    raw = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in deep)

    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 7, 5, 16, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    assert np.array_equal(feeder.decode_image(data, 3), pil_rgb(data))
    assert np.array_equal(feeder.decode_image(data, 3), (deep >> 8).astype(np.uint8))


def test_webp_equals_pil():
    image = Image.fromarray(picture())
    rgba = Image.fromarray(np.dstack([picture(), np.full((23, 37), 128, np.uint8)]))
    for kind, data in {"lossy": encode(image, "WEBP", quality=80), "lossless": encode(image, "WEBP", lossless=True),
                       "lossy with alpha": encode(rgba, "WEBP", quality=80),
                       "lossless with alpha": encode(rgba, "WEBP", lossless=True)}.items():
        assert np.array_equal(feeder.decode_image(data, 3), pil_rgb(data)), kind
        assert np.array_equal(feeder.decode_image(data, 1)[..., 0], pil_gray(data)), kind
    lossless = encode(image, "WEBP", lossless=True)
    assert np.array_equal(feeder.decode_image(lossless, 3), picture())


def test_a_path_is_read_and_named_in_errors(tmp_path):
    path = tmp_path / "cat.jpg"
    data = encode(Image.fromarray(picture(200, 150)), "JPEG", quality=90)
    path.write_bytes(data)
    assert np.array_equal(feeder.decode_image(str(path)), pil_rgb(data))
    path.write_bytes(data[: len(data) * 2 // 3])  # cut inside the picture's data, not its header
    with pytest.raises(feeder.DataError,
                       match=r"cat\.jpg: bad JPEG: Premature end of JPEG file \(it ends before its end-of-image marker\)"):
        feeder.decode_image(path)
    # Corrupt data, not truncated: the row where libjpeg found it.
    corrupt = data[: len(data) // 2] + b"\xff\xd5" + data[len(data) // 2 + 2:]  # a marker inside the scan
    path.write_bytes(corrupt)
    with pytest.raises(feeder.DataError, match=r"cat\.jpg: bad JPEG: .* \(at row \d+ of 150\)"):
        feeder.decode_image(path)


def test_a_jpeg_without_its_end_marker_is_refused_as_pil_refuses_it():
    data = encode(Image.fromarray(picture(64, 48)), "JPEG", quality=90)
    for cut in (data[:-2], data[:-1]):  # every pixel is there, the end-of-image marker is not
        with pytest.raises(OSError, match="truncated"):
            Image.open(io.BytesIO(cut)).load()
        with pytest.raises(feeder.DataError, match=r"x: bad JPEG: Premature end of JPEG file"):
            feeder._feeder.decode_image(cut, 3, "x")
    # Bytes after the marker are ignored, by PIL and here.
    assert np.array_equal(feeder.decode_image(data + b"trailing bytes \xff\xd8", 3), pil_rgb(data))


def chunk_at(data, kind):
    """(start, length) of the first PNG chunk of `kind`: its 4-byte length is at start."""
    at = data.index(kind) - 4
    return at, int.from_bytes(data[at:at + 4], "big")


def test_a_png_whose_image_data_crc_is_wrong_decodes_as_pil_decodes_it():
    """PIL checks the CRCs of the chunks before the image data, not the image data's (IDAT): such
    a PNG trains under torchvision, and was refused here ("IDAT: CRC error")."""
    data = pngs()["RGB"]
    at, length = chunk_at(data, b"IDAT")
    crc = at + 8 + length
    bad_crc = data[:crc] + bytes(b ^ 0xFF for b in data[crc:crc + 4]) + data[crc + 4:]
    assert np.array_equal(pil_rgb(bad_crc), pil_rgb(data))
    assert np.array_equal(feeder.decode_image(bad_crc, 3), pil_rgb(data))
    # The header's CRC is checked by both; corrupt image data is caught by zlib's own checksum.
    ihdr_at, ihdr_length = chunk_at(data, b"IHDR")
    ihdr_crc = ihdr_at + 8 + ihdr_length
    bad_header = data[:ihdr_crc] + bytes(b ^ 0xFF for b in data[ihdr_crc:ihdr_crc + 4]) + data[ihdr_crc + 4:]
    with pytest.raises(OSError):  # PIL: cannot identify image file
        Image.open(io.BytesIO(bad_header))
    with pytest.raises(feeder.DataError, match=r"x: bad PNG: IHDR: CRC error"):
        feeder._feeder.decode_image(bad_header, 3, "x")
    middle = at + 8 + length // 2
    bad_data = data[:middle] + bytes([data[middle] ^ 0x55]) + data[middle + 1:]
    with pytest.raises(feeder.DataError, match=r"x: bad PNG: "):
        feeder._feeder.decode_image(bad_data, 3, "x")


def png_chunk(kind, payload):
    import struct
    import zlib
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def test_text_chunks_are_skipped_unread_not_inflated():
    """1,000 zTXt chunks of 7,000,000 zeros each (a 7 MB file): libpng inflated every one, 27 ms
    each (8 s for 300 of them); PIL refuses such chunks. feeder never uses text: it skips them. The
    bound below is on work (a decode that inflated them would take half a minute), not a speed."""
    import time
    import zlib
    data = pngs()["RGB"]
    zeros = zlib.compress(b"\0" * 7_000_000, 9)
    text = b"".join(png_chunk(b"zTXt", b"k%d\0\0" % i + zeros) for i in range(1000))
    text += png_chunk(b"tEXt", b"Comment\0plain") + png_chunk(b"iTXt", b"k\0\1\0\0\0" + zeros)
    ihdr_at, ihdr_length = chunk_at(data, b"IHDR")
    crafted = data[:ihdr_at + 12 + ihdr_length] + text + data[ihdr_at + 12 + ihdr_length:]
    start = time.monotonic()
    pixels = feeder.decode_image(crafted, 3)
    assert time.monotonic() - start < 5.0
    assert np.array_equal(pixels, pil_rgb(data))


def test_palette_indices_beyond_the_palette_are_black_as_current_pillow_gives_them():
    """A PLTE of 2 colors and pixels indexing past it: Pillow 11 (Debian 13) and libpng give black;
    Pillow 9.4 (Debian 12) gave gray i, its palette padded with a gray ramp, and Pillow changed
    that. feeder gives current Pillow's black, at each bit depth a palette can have; against an
    older Pillow, only those pixels differ (docs/images.md says so)."""
    import io
    import struct
    import zlib
    for depth in (2, 4, 8):
        reach = 1 << depth
        indices = [[0, 1, 2, reach - 1], [reach // 2, 1, 0, reach - 2]]
        per_byte = 8 // depth
        rows = []
        for row in indices:
            packed = bytearray()
            for at in range(0, len(row), per_byte):
                value = 0
                for i in row[at:at + per_byte]:
                    value = (value << depth) | i
                packed.append(value << (depth * (per_byte - len(row[at:at + per_byte]))))
            rows.append(b"\0" + bytes(packed))
        data = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 2, depth, 3, 0, 0, 0))
                + png_chunk(b"PLTE", bytes([10, 20, 30, 40, 50, 60])) + png_chunk(b"IDAT", zlib.compress(b"".join(rows)))
                + png_chunk(b"IEND", b""))
        beyond = np.array(indices) >= 2
        palette = np.array([[10, 20, 30], [40, 50, 60]], dtype=np.uint8)
        expected = np.zeros((2, 4, 3), dtype=np.uint8)
        expected[~beyond] = palette[np.array(indices)[~beyond]]
        assert np.array_equal(feeder.decode_image(data, 3), expected), depth
        image = Image.open(io.BytesIO(data))
        pil_rgb_pixels, pil_gray = np.array(image.convert("RGB")), np.array(image.convert("L"))
        assert np.array_equal(pil_rgb_pixels[~beyond], expected[~beyond]), depth
        if pil_rgb_pixels[0, 3].tolist() == [reach - 1] * 3:  # an older Pillow's gray ramp
            assert np.array_equal(pil_rgb_pixels[beyond][:, 0], np.array(indices)[beyond]), depth
        else:
            assert np.array_equal(pil_rgb_pixels, expected), depth
            assert np.array_equal(feeder.decode_image(data, 1)[..., 0], pil_gray), depth


def sof_with_size(data, width, height):
    """The JPEG with its frame header's size replaced."""
    at = data.index(b"\xff\xc0") + 5
    return data[:at] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + data[at + 4:]


def test_bad_images_are_refused_with_what_is_wrong():
    jpeg = jpegs()["baseline RGB 4:2:0"]
    png = pngs()["RGB"]
    webp = encode(Image.fromarray(picture()), "WEBP", quality=80)
    cases = [
        (b"", r"x: empty \(0 bytes\), not an image"),
        (b"GIF89a" + bytes(30), r"x: not a JPEG, PNG or WebP image"),
        (b"hello, I am a text file named .jpg", r"x: not a JPEG, PNG or WebP image"),
        (jpeg[:300], r"x: bad JPEG: Premature end of JPEG file"),
        (jpeg[:4], r"x: bad JPEG"),
        (jpeg[:400] + bytes(200) + jpeg[600:], r"x: bad JPEG: "),
        (sof_with_size(jpeg, 60000, 60000), r"x: JPEG declares 60000x60000 pixels, more than the limit of 178956970"),
        (png[:60], r"x: bad PNG: "),
        (png[:33] + b"\x00\x00\x00\x04IDAT" + bytes(8) + png[33:], r"x: bad PNG: "),
        (png[:16] + (60000).to_bytes(4, "big") * 2 + png[24:], r"x: bad PNG: "),  # IHDR checksum no longer matches
        (webp[:40], r"x: bad WebP: "),
    ]
    for data, message in cases:
        for channels in (1, 3):
            with pytest.raises(feeder.DataError, match=message):
                feeder._feeder.decode_image(data, channels, "x")
    # A PNG bomb with a valid checksum: refused before decoding.
    import struct
    import zlib
    ihdr = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
    bomb = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
            + png[33:])
    with pytest.raises(feeder.DataError, match=r"x: PNG declares 60000x60000 pixels, more than the limit"):
        feeder._feeder.decode_image(bomb, 3, "x")
    with pytest.raises(ValueError, match="channels must be 1"):
        feeder.decode_image(jpeg, 4)
