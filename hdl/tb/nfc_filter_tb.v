// Testbench for the generated NfcFilter (target/hdl/nfc_filter.v).
//
// Reads one line per clock from +vectors=<file>:
//   mask_we mask_addr mask_data start rows row_len keep in_valid in_data  (hex;
//   in_data a 128-bit beat of 8 elements, lane j in bits 16j..)
// applies it, gives one rising edge, and after the edge writes every output
// beat to +out=<file> as "<clock> <count> <lane0> .. <lane7>" (decimal
// clock, hex count and lanes),
// the same sampling point as hdl::sim::tick. The Rust side
// (tests/verilog_cosim.rs) compares that file with the model.
`timescale 1ns / 1ps
module nfc_filter_tb;
    reg clock = 1'b0;
    reg mask_we = 1'b0;
    reg [1:0] mask_addr = 2'd0;
    reg [63:0] mask_data = 64'd0;
    reg start = 1'b0;
    reg [8:0] rows = 9'd0;
    reg [13:0] row_len = 14'd0;
    reg [13:0] keep = 14'd0;
    reg in_valid = 1'b0;
    reg [127:0] in_data = 128'd0;
    wire out_valid;
    wire [3:0] out_count;
    wire [127:0] out_data;

    nfc_filter dut (
        .clock(clock), .mask_we(mask_we), .mask_addr(mask_addr),
        .mask_data(mask_data), .start(start), .rows(rows), .row_len(row_len),
        .keep(keep), .in_valid(in_valid), .in_data(in_data),
        .out_valid(out_valid), .out_count(out_count), .out_data(out_data)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h\n", mask_we, mask_addr, mask_data,
                    start, rows, row_len, keep, in_valid, in_data);
        while (n == 9) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid)
                $fwrite(fout, "%0d %h %h %h %h %h %h %h %h %h\n", t, out_count,
                        out_data[15:0], out_data[31:16], out_data[47:32], out_data[63:48],
                        out_data[79:64], out_data[95:80], out_data[111:96], out_data[127:112]);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h\n", mask_we, mask_addr, mask_data,
                        start, rows, row_len, keep, in_valid, in_data);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
