// Testbench for the generated SelectK (target/hdl/select_k.v).
//
// Reads one line per clock from +vectors=<file>:
//   start k in_valid in_key flush  (hex)
// applies it, gives one rising edge, and after the edge writes to
// +out=<file> "o <clock> <index>" for each out_valid and "d <clock>" for
// each done (decimal clock, hex index), the sampling point of
// hdl::sim::tick. tests/verilog_cosim.rs compares it with the model.
`timescale 1ns / 1ps
module select_k_tb;
    reg clock = 1'b0;
    reg start = 1'b0;
    reg [15:0] k = 16'd0;
    reg in_valid = 1'b0;
    reg [63:0] in_key = 64'd0;
    reg flush = 1'b0;
    wire out_valid;
    wire [31:0] out_index;
    wire done;
    wire busy;
    wire overflow;
    wire [15:0] selected;
    wire [31:0] res_index;

    select_k dut (
        .clock(clock), .start(start), .k(k), .in_valid(in_valid),
        .in_key(in_key), .flush(flush),
        .out_valid(out_valid), .out_index(out_index), .done(done), .busy(busy),
        .overflow(overflow), .selected(selected), .res_addr(16'd0), .res_index(res_index)
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
        n = $fscanf(fin, "%h %h %h %h %h\n", start, k, in_valid, in_key, flush);
        while (n == 5) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "o %0d %h\n", t, out_index);
            if (done) $fwrite(fout, "d %0d\n", t);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h\n", start, k, in_valid, in_key, flush);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
