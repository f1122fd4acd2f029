// HdrCrossCheck.java: HdrHistogram Java's side of hdr_codec_test (compiled at test time against
// Debian's libhdrhistogram-java). Prints one line of figures per command.
//   encode V...     a Histogram(1, Long.MAX_VALUE, 2) of the values: its V2 compressed base64
//   plain V...      the same histogram's uncompressed V2 encoding, in hex
//   decode BASE64   count min max mean p50 p99 p99.9 of the decoded histogram
//   log FILE        count min max mean p50 p99 p99.9 of all intervals of an .hlog, then the number
//                   of intervals and their tags
import java.io.File;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.TreeSet;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class HdrCrossCheck {
  static void figures(Histogram h) {
    System.out.println(h.getTotalCount() + " " + h.getMinValue() + " " + h.getMaxValue() + " "
        + String.format("%.3f", h.getMean()) + " " + h.getValueAtPercentile(50) + " "
        + h.getValueAtPercentile(99) + " " + h.getValueAtPercentile(99.9));
  }

  static Histogram of(String[] args) {
    Histogram h = new Histogram(1, Long.MAX_VALUE, 2);
    for (int i = 1; i < args.length; i++) h.recordValue(Long.parseLong(args[i]));
    return h;
  }

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "encode": {
        Histogram h = of(args);
        ByteBuffer b = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int n = h.encodeIntoCompressedByteBuffer(b);
        byte[] out = new byte[n];
        b.flip();
        b.get(out);
        System.out.println(Base64.getEncoder().encodeToString(out));
        break;
      }
      case "plain": {
        Histogram h = of(args);
        ByteBuffer b = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int n = h.encodeIntoByteBuffer(b);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < n; i++) s.append(String.format("%02x", b.get(i)));
        System.out.println(s);
        break;
      }
      case "decode": {
        byte[] bytes = Base64.getDecoder().decode(args[1]);
        figures(Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(bytes), 0));
        break;
      }
      case "log": {
        HistogramLogReader r = new HistogramLogReader(new File(args[1]));
        Histogram all = new Histogram(1, Long.MAX_VALUE, 2);
        int intervals = 0;
        TreeSet<String> tags = new TreeSet<>();
        EncodableHistogram e;
        while ((e = r.nextIntervalHistogram()) != null) {
          all.add((Histogram) e);
          intervals++;
          if (e.getTag() != null) tags.add(e.getTag());
        }
        figures(all);
        System.out.println(intervals + " " + String.join(",", tags));
        break;
      }
      default: throw new IllegalArgumentException(args[0]);
    }
  }
}
